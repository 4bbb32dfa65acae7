//! What of a provider's answer the fleet keeps. The attempts log and an operation's
//! `result` hold what reconciliation and an operator need — ids, status, money, versions,
//! error types and codes — and nothing else: a provider body may echo customer data
//! (account holders' names, descriptions, addresses, card details) that the fleet has no
//! reason to store. Classification reads the whole body first; only this summary is
//! written.

use serde_json::{Map, Value};

/// Top-level fields kept: what the classifiers, lookups and webhooks read (`id`,
/// `status`, `failure_code`), what identifies the effect (`reference`, `external_id`,
/// a refund's `payment_id`, a deal's `version`, the transition an order last took) and
/// its amount.
const KEPT: [&str; 10] = [
    "id",
    "status",
    "failure_code",
    "reference",
    "external_id",
    "payment_id",
    "version",
    "last_transition_ref",
    "amount_minor",
    "currency",
];

/// Fields of an `error` object kept: its type and code, the parameter it names, and what
/// a conditional update met (the version, or the status and the transition that set it).
const KEPT_IN_ERROR: [&str; 6] = [
    "type",
    "code",
    "param",
    "current_version",
    "current_status",
    "last_transition_ref",
];

/// The allow-listed summary of a provider answer body, or `None` when nothing in it is
/// kept (not a JSON object, or none of the fields above). A kept field must hold a
/// string, number or boolean; anything nested under an allowed name is dropped too.
pub fn answer_summary(body: &Value) -> Option<Value> {
    let object = body.as_object()?;
    let mut kept = pick(object, &KEPT);
    if let Some(error) = object.get("error").and_then(Value::as_object) {
        let error = pick(error, &KEPT_IN_ERROR);
        if !error.is_empty() {
            kept.insert("error".to_owned(), Value::Object(error));
        }
    }
    (!kept.is_empty()).then_some(Value::Object(kept))
}

fn pick(object: &Map<String, Value>, names: &[&str]) -> Map<String, Value> {
    names
        .iter()
        .filter_map(|name| match object.get(*name)? {
            v @ (Value::String(_) | Value::Number(_) | Value::Bool(_)) => {
                Some(((*name).to_owned(), v.clone()))
            }
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
