//! Keeps the tool list small: an agent pays for every byte of `tools/list` in its context,
//! on every turn, before it calls anything. The schemas generated from the reading types
//! say everything the validator checks, which is right for `intent.v1.json` and far too
//! much for a model:
//!
//! - The identifier rule (no control, blank or invisible characters) is a 241-character
//!   pattern that every identifier carries. It is dropped here, with its "not only dots"
//!   twin: the server checks both and names the member it refuses, and the whole rule
//!   stays in one referenced place, `GET /v1/schemas/intent.v1.json`.
//! - A currency is any active ISO 4217 code: three capitals here, the list of codes in
//!   that same document (the server refuses another code, naming the member).
//! - Descriptions keep their first sentence; what every proposal tool shares is said
//!   once, in the server's instructions.
//! - Output schemas keep the members and their types, not their prose (the tool's
//!   description says what matters).
//!
//! Nothing here changes what is accepted: the server reads the arguments with the same
//! types as before; only what is said about them is shorter.

use rmcp::model::JsonObject;
use serde_json::Value;

/// A pattern longer than this is a validator's detail, not a hint for a model.
const LONGEST_PATTERN: usize = 64;
/// An enum this long is a code list (currencies), described by its form instead.
const LONGEST_ENUM: usize = 24;

/// An input schema as the tool list shows it; `notes` replace the descriptions of the
/// top-level members named (an empty note removes the description).
pub fn input(mut schema: JsonObject, notes: &[(&str, &str)]) -> JsonObject {
    schema.remove("$schema");
    // The type's doc comment: the tool's description says what the tool is.
    schema.remove("description");
    let mut value = Value::Object(schema);
    trim(&mut value, Prose::FirstSentence);
    let Value::Object(mut schema) = value else {
        return JsonObject::new();
    };
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        // An optional member is left out, never sent as null (which the server also
        // takes): its type need not say null.
        for (member, p) in properties.iter_mut() {
            if required.contains(member) {
                continue;
            }
            if let Some(Value::Array(types)) = p.get_mut("type") {
                types.retain(|t| t != "null");
                if let [one] = types.as_slice() {
                    let one = one.clone();
                    p["type"] = one;
                }
            }
        }
        for (member, note) in notes {
            if let Some(Value::Object(p)) = properties.get_mut(*member) {
                if note.is_empty() {
                    p.remove("description");
                } else {
                    p.insert("description".to_owned(), Value::from(*note));
                }
            }
        }
    }
    schema
}

/// An output schema as the tool list shows it: the members and their types.
pub fn output(schema: JsonObject) -> JsonObject {
    let mut value = Value::Object(schema);
    trim(&mut value, Prose::None);
    match value {
        Value::Object(mut schema) => {
            schema.remove("$schema");
            // Which members are always there is the tool's description's to say; a
            // client checks the types of those that are.
            schema.remove("required");
            schema
        }
        _ => JsonObject::new(),
    }
}

/// An output schema of which only the members in `keep` are described (in the schema and
/// in each of its `$defs`): the answer still has them all (no `additionalProperties:
/// false` anywhere here), but the list says only what an agent acts on.
pub fn output_of_members(schema: JsonObject, keep: &[&str]) -> JsonObject {
    let mut schema = output(schema);
    keep_members(&mut schema, keep);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut() {
            if let Value::Object(def) = def {
                keep_members(def, keep);
            }
        }
    }
    schema
}

fn keep_members(schema: &mut JsonObject, keep: &[&str]) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        if properties.keys().any(|k| keep.contains(&k.as_str())) {
            properties.retain(|k, _| keep.contains(&k.as_str()));
        } else {
            return;
        }
        // The members left out are still sent: a schema that closed its object
        // (`additionalProperties: false`, as the view's type does) would refuse them.
        schema.remove("additionalProperties");
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_some_and(|r| keep.contains(&r)));
    }
}

#[derive(Clone, Copy)]
enum Prose {
    FirstSentence,
    None,
}

fn trim(value: &mut Value, prose: Prose) {
    match value {
        Value::Object(map) => {
            // Inside out: an alternative is trimmed before its parent judges it.
            for (key, child) in map.iter_mut() {
                // Under `properties` and `$defs` the keys are names, not keywords.
                if key == "properties" || key == "$defs" {
                    if let Value::Object(named) = child {
                        for schema in named.values_mut() {
                            trim(schema, prose);
                        }
                    }
                } else {
                    trim(child, prose);
                }
            }
            consts_as_enum(map);
            nullable_in_one(map);
            let long_pattern = map
                .get("pattern")
                .and_then(Value::as_str)
                .is_some_and(|p| p.len() > LONGEST_PATTERN);
            if long_pattern {
                map.remove("pattern");
                // The rest of the identifier rule travels with its pattern: not only dots.
                map.remove("not");
            }
            // "No NUL", "no control characters": the server refuses them anywhere, naming
            // the member, and no model means to send them.
            if map
                .get("pattern")
                .and_then(Value::as_str)
                .is_some_and(|p| p.starts_with("^[^\\u0000"))
            {
                map.remove("pattern");
            }
            // 1 to 256 characters: every identifier's and short text's bounds, said once in
            // the instructions.
            if map.get("minLength") == Some(&Value::from(1))
                && map.get("maxLength") == Some(&Value::from(256))
            {
                map.remove("minLength");
                map.remove("maxLength");
            }
            let code_list = map
                .get("enum")
                .and_then(Value::as_array)
                .is_some_and(|codes| codes.len() > LONGEST_ENUM);
            if code_list {
                map.remove("enum");
                map.insert("type".to_owned(), Value::from("string"));
                map.insert("pattern".to_owned(), Value::from("^[A-Z]{3}$"));
            }
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            // `int64`, `uint64`: Rust's widths, nothing a caller can act on.
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("int") || f.starts_with("uint"))
            {
                map.remove("format");
            }
            map.remove("title");
            match prose {
                Prose::None => {
                    map.remove("description");
                }
                Prose::FirstSentence => {
                    if let Some(Value::String(text)) = map.get_mut("description") {
                        *text = first_sentence(text);
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                trim(item, prose);
            }
        }
        _ => {}
    }
}

/// `anyOf: [{type: "string", …}, {type: "null"}]` said as `type: ["string", "null"]` with
/// the same keywords: they apply to strings only, so the two accept the same values.
fn nullable_in_one(map: &mut serde_json::Map<String, Value>) {
    let Some(Value::Array(any_of)) = map.get("anyOf") else {
        return;
    };
    let [Value::Object(one), Value::Object(null)] = any_of.as_slice() else {
        return;
    };
    let is_null = null.len() == 1 && null.get("type") == Some(&Value::from("null"));
    let Some(Value::String(kind)) = one.get("type") else {
        return;
    };
    if !is_null || kind == "null" {
        return;
    }
    let mut merged = one.clone();
    merged.insert("type".to_owned(), serde_json::json!([kind, "null"]));
    map.remove("anyOf");
    for (k, v) in merged {
        map.entry(k).or_insert(v);
    }
}

/// `oneOf: [{const: "a", description}, {const: "b", description}]` (an enum whose values a
/// doc comment each described) said as `enum: ["a", "b"]`: the member's own description
/// says what they mean.
fn consts_as_enum(map: &mut serde_json::Map<String, Value>) {
    let Some(Value::Array(alternatives)) = map.get("oneOf") else {
        return;
    };
    let values: Option<Vec<Value>> = alternatives
        .iter()
        .map(|a| a.get("const").filter(|c| c.is_string()).cloned())
        .collect();
    let Some(values) = values else {
        return;
    };
    map.remove("oneOf");
    map.insert("enum".to_owned(), Value::Array(values));
    map.insert("type".to_owned(), Value::from("string"));
}

/// The first clause of a doc comment's first sentence, on one line: what the member is,
/// without the why (which the tool's description or the refusal says when it matters).
fn first_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut end = flat.len();
    for stop in [". ", ": ", "; "] {
        let mut from = 0;
        while let Some(at) = flat[from..end].find(stop) {
            let at = from + at;
            // "e.g. " and "i.e. " end no sentence.
            if stop == ". " && (flat[..at].ends_with("e.g") || flat[..at].ends_with("i.e")) {
                from = at + 2;
                continue;
            }
            end = at;
            break;
        }
    }
    let clause = flat[..end].trim_end_matches('.');
    format!("{clause}.")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_identifier_pattern_and_the_currency_list_are_not_repeated() {
        let long = "x".repeat(241);
        let codes: Vec<String> = (0..180).map(|i| format!("C{i:02}")).collect();
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": long, "not": {"pattern": "^\\.+$"}, "minLength": 1, "maxLength": 256,
                       "description": "Who is paid (e.g. vendor_77): more prose.\nAnd more."},
                "currency": {"enum": codes, "description": "An active ISO 4217 code."},
                "op": {"anyOf": [{"type": "string", "pattern": "^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$"}, {"type": "null"}], "default": null},
                "why": {"type": "string", "pattern": "^[^\\u0000]*$", "maxLength": 4096},
                "n": {"type": "integer", "format": "int64"}
            }
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let lean = Value::Object(input(schema, &[("op", "Left out: derived.")]));
        assert_eq!(
            lean,
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Who is paid (e.g. vendor_77)."},
                    "currency": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "An active ISO 4217 code."},
                    "op": {"type": "string", "pattern": "^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$", "description": "Left out: derived."},
                    "why": {"type": "string", "maxLength": 4096},
                    "n": {"type": "integer"}
                }
            })
        );
    }

    #[test]
    fn names_under_properties_are_kept_even_when_they_are_keywords() {
        let schema =
            json!({"properties": {"title": {"type": "string", "description": "A title."}}});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        assert_eq!(
            Value::Object(output(schema)),
            json!({"properties": {"title": {"type": "string"}}})
        );
    }
}
