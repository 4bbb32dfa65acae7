//! The JSON Schemas generated for proposals (the MCP tools' input schemas) say what the
//! reading does:
//!
//! - each payload member's schema is exactly the one `shared/schemas/intent.v1.json`
//!   states for it, and the payloads have the same members and required ones;
//! - for every intent fixture, the arguments a tool would receive for it (the fixture
//!   without `schema`, `action` and `provider`) are accepted by the tool's schema exactly
//!   when `envelope` + `parse_intent` accept them.

mod support;

use fleet_core::catalogue::Target;
use fleet_core::intent::proposal::envelope;
use fleet_core::{parse_intent, Action};
use serde_json::{Map, Value};
use support::{fixtures, intent_schema};

const ASSIGNED: &str = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";
const ONLY_TENANT: &str = "org_482";

/// The root schema of the action's tool, as the catalogue generates it for the MCP server.
fn tool_schema(action: Action) -> Value {
    Value::Object(action.spec().proposal_schema())
}

fn takes_target(action: Action) -> bool {
    matches!(action.spec().target, Target::Required(_))
}

/// `schema` with every `{"$ref": "#/$defs/x"}` replaced by `defs.x` (except the recursive
/// `any_without_nul`, compared on its own) and the annotations (`description`, `default`)
/// dropped.
fn resolved(schema: &Value, defs: &Value) -> Value {
    match schema {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref") {
                let name = r.strip_prefix("#/$defs/").unwrap();
                if name != "any_without_nul" {
                    return resolved(&defs[name], defs);
                }
            }
            Value::Object(
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "description" | "default"))
                    .map(|(k, v)| (k.clone(), resolved(v, defs)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| resolved(v, defs)).collect()),
        other => other.clone(),
    }
}

/// The `$defs` entry of the action's payload in intent.v1.json: its wire name with `_`
/// for `.`, without the CRM's prefix (`deal_update`).
fn file_payload_def(action: Action) -> String {
    action
        .wire_name()
        .trim_start_matches("crm.")
        .replace('.', "_")
}

#[test]
fn every_payload_member_is_described_as_intent_v1_states_it() {
    let file = intent_schema();
    let file_defs = &file["$defs"];
    for action in Action::ALL {
        let tool = tool_schema(action);
        let tool_defs = tool.get("$defs").cloned().unwrap_or(Value::Null);
        let ours = resolved(&tool["properties"]["payload"], &tool_defs);
        let theirs = resolved(&file_defs[file_payload_def(action).as_str()], file_defs);
        assert_eq!(ours, theirs, "{}", action.wire_name());
        assert_eq!(tool["additionalProperties"], Value::Bool(false));
        if action == Action::CrmDealUpdate {
            assert_eq!(
                resolved(&tool_defs["any_without_nul"], &tool_defs),
                resolved(&file_defs["any_without_nul"], file_defs)
            );
        }
        // The envelope members the tool takes have intent.v1's limits too.
        for member in [
            "policy_version",
            "data_version",
            "approval_ttl_seconds",
            "rationale",
        ] {
            assert_eq!(
                resolved(&tool["properties"][member], &tool_defs),
                resolved(&file["properties"][member], file_defs),
                "{} {member}",
                action.wire_name()
            );
        }
    }
}

#[test]
fn the_tool_schemas_are_documented_and_ask_only_for_what_the_agent_must_say() {
    for action in Action::ALL {
        let tool = tool_schema(action);
        let mut required: Vec<&str> = tool["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort();
        let mut expected = vec![
            "approval_ttl_seconds",
            "data_version",
            "payload",
            "policy_version",
        ];
        if takes_target(action) {
            expected.push("target");
        }
        expected.sort();
        assert_eq!(required, expected, "{}", action.wire_name());
        for (name, member) in tool["properties"].as_object().unwrap() {
            assert!(
                member["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{} {name} has no description",
                action.wire_name()
            );
        }
    }
}

/// The tool and the arguments it would receive for an intent, when the intent names an
/// action at all: the intent less what the tool implies.
fn as_tool_call(bytes: &[u8]) -> Option<(Action, Map<String, Value>)> {
    let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(bytes) else {
        return None;
    };
    let action = Action::parse(object.get("action")?.as_str()?)?;
    for implied in ["schema", "action", "provider"] {
        object.remove(implied);
    }
    // Only the tools of targeted actions take a target; an intent for another action says
    // `"target": null`, which its tool call would simply leave out.
    if !takes_target(action) && object.get("target") == Some(&Value::Null) {
        object.remove("target");
    }
    Some((action, object))
}

#[test]
fn a_tools_schema_accepts_exactly_the_arguments_the_reading_accepts() {
    let validators: Vec<(Action, jsonschema::Validator)> = Action::ALL
        .into_iter()
        .map(|a| {
            (
                a,
                jsonschema::draft202012::new(&tool_schema(a)).expect("a valid 2020-12 schema"),
            )
        })
        .collect();
    let (mut accepted, mut refused) = (0, 0);
    for kind in ["valid", "invalid"] {
        for (name, bytes) in fixtures(kind) {
            let Some((action, arguments)) = as_tool_call(&bytes) else {
                continue;
            };
            let validator = &validators.iter().find(|(a, _)| *a == action).unwrap().1;
            let by_schema = validator.is_valid(&Value::Object(arguments.clone()));
            let by_reading = envelope(action, arguments, ASSIGNED, Some(ONLY_TENANT))
                .and_then(|e| parse_intent(&serde_json::to_vec(&Value::Object(e)).unwrap()))
                .map_err(|e| e.code());
            assert_eq!(
                by_schema,
                by_reading.is_ok(),
                "{kind}/{name}: the schema says {by_schema}, the reading {by_reading:?}"
            );
            if by_schema {
                accepted += 1;
            } else {
                refused += 1;
            }
        }
    }
    assert!(
        accepted >= 40 && refused >= 70,
        "{accepted} accepted, {refused} refused"
    );
}
