//! `IntentV1` in the OpenAPI document: one schema per action, told apart by `action`.
//!
//! `shared/schemas/intent.v1.json` states the per-action rules as a chain of
//! `if`/`then`/`else` (the payload's schema and whether `target` is required, by
//! `action`). JSON Schema validators follow that, but code generators do not: they see a
//! payload of type `object` and nothing more, so a typed client could neither build an
//! intent nor be stopped from sending a string as an amount. The document therefore
//! carries the same rules rewritten as a `oneOf` with a `discriminator` on `action`, each
//! branch a closed object whose `action` is a constant and whose `payload` is the action's
//! schema. It is derived here from the file at build time, never written by hand, so the
//! two cannot drift; a test feeds the intent fixtures to both and wants the same verdicts.
//!
//! One rule is added that the file leaves to the intake: the provider an action is sent
//! to is the catalogue's (`fleet_core::Action::spec`), so each branch states its
//! `provider` as a constant. The queue's validator keeps refusing another provider with
//! `unsupported_provider`, as the API does; the document states it so that no
//! schema-valid request is refused for it.

use fleet_core::Action;
use serde_json::{json, Map, Value};

/// The document's component holding the branch for `action`: `payment.create` gives
/// `PaymentCreateIntent`.
pub fn component_name(action: &str) -> String {
    let mut name: String = action
        .split(['.', '_'])
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    name.push_str("Intent");
    name
}

/// One per-action branch of the intent.
pub struct Variant {
    pub action: String,
    pub component: String,
    pub schema: Value,
}

/// The intent schema (its `$defs` already moved out, references already pointing at the
/// document's components) as `IntentV1`, a discriminated `oneOf`, and its branches.
///
/// Panics when the file no longer has the shape this reads (properties, an `action`
/// enum, an `if`/`then`/`else` chain on `action`): the API would otherwise serve a
/// document that says less than the file, and the test of the document catches it first.
pub fn split(
    intent: &Map<String, Value>,
    component_ref: impl Fn(&str) -> String,
) -> (Value, Vec<Variant>) {
    let properties = intent["properties"]
        .as_object()
        .expect("the intent schema has properties");
    let required: Vec<Value> = intent["required"]
        .as_array()
        .expect("the intent schema lists its required members")
        .clone();
    let actions: Vec<String> = properties["action"]["enum"]
        .as_array()
        .expect("the intent schema enumerates its actions")
        .iter()
        .map(|a| a.as_str().expect("an action is a string").to_owned())
        .collect();
    let rules = per_action_rules(intent);
    let variants: Vec<Variant> = actions
        .iter()
        .map(|action| {
            let then = rules
                .iter()
                .find(|(a, _)| a == action)
                .map(|(_, then)| then.clone())
                .unwrap_or_else(|| panic!("intent.v1.json has no rule for {action}"));
            Variant {
                action: action.clone(),
                component: component_name(action),
                schema: branch(action, properties, &required, &then),
            }
        })
        .collect();
    let mut root = Map::new();
    for key in ["title", "description"] {
        if let Some(v) = intent.get(key) {
            root.insert(key.to_owned(), v.clone());
        }
    }
    root.insert(
        "oneOf".to_owned(),
        variants
            .iter()
            .map(|v| json!({"$ref": component_ref(&v.component)}))
            .collect(),
    );
    let mapping: Map<String, Value> = variants
        .iter()
        .map(|v| (v.action.clone(), Value::String(component_ref(&v.component))))
        .collect();
    root.insert(
        "discriminator".to_owned(),
        json!({"propertyName": "action", "mapping": mapping}),
    );
    (Value::Object(root), variants)
}

/// Each action's `then` of the `if`/`then`/`else` chain, in order.
fn per_action_rules(intent: &Map<String, Value>) -> Vec<(String, Map<String, Value>)> {
    let mut rules = Vec::new();
    let mut at = Some(intent);
    while let Some(node) = at {
        let Some(condition) = node.get("if") else {
            break;
        };
        let action = condition["properties"]["action"]["const"]
            .as_str()
            .expect("each rule is chosen by a constant action")
            .to_owned();
        let then = node["then"]
            .as_object()
            .expect("each rule has a then")
            .clone();
        rules.push((action, then));
        at = node.get("else").and_then(Value::as_object);
    }
    rules
}

/// The intent for `action` alone: every member of the intent with the action's own rule
/// applied, `action` and `provider` constants, closed like the intent itself.
fn branch(
    action: &str,
    properties: &Map<String, Value>,
    required: &[Value],
    then: &Map<String, Value>,
) -> Value {
    let mut properties = properties.clone();
    properties.insert("action".to_owned(), json!({"const": action}));
    let provider = Action::parse(action)
        .unwrap_or_else(|| panic!("intent.v1.json names {action}, which fleet-core lacks"))
        .spec()
        .provider
        .as_str();
    properties.insert(
        "provider".to_owned(),
        json!({
            "const": provider,
            "description": format!("The provider that serves {action}. Another is refused (`unsupported_provider`)."),
        }),
    );
    if let Some(Value::Object(own)) = then.get("properties") {
        for (name, schema) in own {
            properties.insert(name.clone(), schema.clone());
        }
    }
    let mut required = required.to_vec();
    if let Some(Value::Array(more)) = then.get("required") {
        for name in more {
            if !required.contains(name) {
                required.push(name.clone());
            }
        }
    }
    json!({
        "type": "object",
        "description": format!("An intent.v1 message proposing {action}."),
        "additionalProperties": false,
        "required": required,
        "properties": properties,
    })
}

/// The intent schema's one recursive union, `any_without_nul` (a JSON value with no U+0000
/// in any string or member name, at any depth: a CRM patch's values), restated for
/// generators. A union that refers to itself is what generators give up on: one of them
/// drops every schema that uses it, the CRM update intent included. Said the other way
/// round, "not a value that holds a U+0000 somewhere", it is the same set of values for
/// a validator, and the generators read it as "any value". The restatement is checked
/// against the file's form here (a changed form panics until this is updated) and against
/// the file's verdicts by the document's test.
pub fn restate_any_without_nul(schemas: &mut Map<String, Value>, prefix: &str) {
    let name = format!("{prefix}any_without_nul");
    let holding = format!("{prefix}json_with_nul");
    let this = format!("#/components/schemas/{name}");
    let nul_free = json!({"pattern": "^[^\\u0000]*$"});
    let expected = json!({"anyOf": [
        {"type": ["null", "boolean", "number"]},
        {"type": "string", "pattern": "^[^\\u0000]*$"},
        {"type": "array", "items": {"$ref": this}},
        {"type": "object", "propertyNames": nul_free, "additionalProperties": {"$ref": this}},
    ]});
    assert_eq!(
        schemas.get(&name),
        Some(&expected),
        "intent.v1.json's any_without_nul changed: restate it anew for the document"
    );
    let with_nul = format!("#/components/schemas/{holding}");
    schemas.insert(
        holding,
        json!({
            "description": "A JSON value with a U+0000 in a string or a member name, at any depth.",
            "anyOf": [
                {"type": "string", "pattern": "\\u0000"},
                {"type": "array", "contains": {"$ref": with_nul}},
                {"type": "object", "not": {"propertyNames": nul_free}},
                {"type": "object", "not": {"additionalProperties": {"not": {"$ref": with_nul}}}},
            ],
        }),
    );
    schemas.insert(
        name,
        json!({
            "description": "Any JSON value without U+0000 in a string or a member name, at any depth.",
            "not": {"$ref": with_nul},
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_names_are_the_actions_in_words() {
        assert_eq!(component_name("payment.create"), "PaymentCreateIntent");
        assert_eq!(component_name("crm.deal.update"), "CrmDealUpdateIntent");
        assert_eq!(
            component_name("order.status.change"),
            "OrderStatusChangeIntent"
        );
    }

    #[test]
    fn every_action_of_the_catalogue_has_a_branch_with_its_provider() {
        let intent: Value = serde_json::from_str(crate::schemas::INTENT_V1_SCHEMA).unwrap();
        let (root, variants) = split(intent.as_object().unwrap(), |c| format!("#/c/{c}"));
        let actions: Vec<&str> = variants.iter().map(|v| v.action.as_str()).collect();
        let catalogue: Vec<&str> = Action::ALL.iter().map(|a| a.wire_name()).collect();
        assert_eq!(actions.len(), catalogue.len());
        for action in &catalogue {
            assert!(actions.contains(action), "{action} has no branch");
        }
        for v in &variants {
            let spec = Action::parse(&v.action).unwrap().spec();
            assert_eq!(
                v.schema["properties"]["provider"]["const"],
                spec.provider.as_str()
            );
            assert_eq!(v.schema["properties"]["action"]["const"], v.action.as_str());
            assert_eq!(
                root["discriminator"]["mapping"][&v.action],
                format!("#/c/{}", v.component)
            );
            // Every branch's payload is an action's schema, never the open object.
            assert!(
                v.schema["properties"]["payload"]["$ref"].is_string(),
                "{}",
                v.action
            );
        }
    }
}
