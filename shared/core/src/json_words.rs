//! A JSON value in words, wherever one is said to a person: an action's sentence for the
//! approver (a deal's patch) and the operation page.

use serde_json::Value;

/// A JSON value as a person reads it: text in quotes, `null` as "nothing", the rest as JSON.
pub fn value_in_words(v: &Value) -> String {
    match v {
        Value::Null => "nothing".to_owned(),
        Value::String(s) => format!("\"{s}\""),
        Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_) => v.to_string(),
    }
}
