//! The OpenAPI 3.1 document, generated from the handlers themselves: every route is
//! registered through `utoipa_axum`'s router together with its `#[utoipa::path]`, so a
//! route cannot exist without being documented. The schemas below document what the
//! handlers send and receive ([`crate::view_schemas`] the views, the routes' modules their
//! bodies). The operation view's is derived from the type the API answers with, core's
//! [`fleet_core::OperationView`] (what the SQL function `operation_view` returns, read and
//! written back unchanged), so the document cannot describe another view than the one
//! served. The intent's schema is not restated here: the document
//! carries the JSON Schema the intake is held to (`shared/schemas/intent.v1.json`),
//! put in by [`document`] as one schema per action ([`crate::intent_variants`]).

use serde_json::Value;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::contract_enums::{ErrorCode, EventTypeName, RefusalReason};
use crate::decision_routes::{ApproveBody, DisputeBody, RejectBody, ResolveBody};
use crate::problem::Problem;
use crate::schemas::{IntentV1, INTENT_V1_SCHEMA};
use crate::view_schemas::{ApprovalStatusName, OperationPage, OperationView, StatusName};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "fleet API",
        description = "Submit intents, follow the operations they become, and decide on them. Every request carries `Authorization: Bearer <token>` (`fleetctl token create`); a caller sees, submits and decides only for the tenants its principal was granted, and only what its role permits (agents submit, approvers approve and reject, operators resolve and dispute).",
    ),
    modifiers(&BearerAuth),
    components(schemas(Problem, ErrorCode, RefusalReason, EventTypeName, IntentV1, OperationView, OperationPage, StatusName, ApprovalStatusName, ApproveBody, RejectBody, ResolveBody, DisputeBody, crate::mandates::MandateBody, crate::mandates::RevokeApprovalBody, crate::batch_approval::BatchBody, crate::history::HistoryPage, crate::history::HistoryEntry, crate::history::HistoryKindName, crate::evidence::EvidenceBundle, crate::evidence::EvidenceKeys, crate::evidence::EvidenceKeyEntry, crate::dead_letters::DeadLetter, crate::dead_letters::DeadLetterPage, crate::dead_letters::DeadLetterActionView, crate::dead_letters::DiscardBody, crate::dead_letters::ReplayOutcome)),
    tags(
        (name = "intents", description = "Proposing side effects."),
        (name = "operations", description = "Following them."),
        (name = "schemas", description = "The contract, machine-readable."),
        (name = "decisions", description = "People deciding on them: approvers approve or reject, operators resolve or dispute."),
        (name = "mandates", description = "Standing mandates: an approver's signed, bounded, revocable permission that approves routine operations at claim."),
        (name = "dead-letters", description = "Operators: the messages a work queue could not take, kept by the fleet, read, replayed through the same validation, or discarded."),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            let mut scheme = Http::new(HttpAuthScheme::Bearer);
            scheme.description = Some(
                "A token made by `fleetctl token create` (`fleet_` + 64 hex digits).".to_owned(),
            );
            components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
        }
    }
}

/// Where the intent schema's own definitions (`$defs`) go: components of their own, so
/// that every validator and generator resolves them as ordinary component references.
const INTENT_DEF_PREFIX: &str = "IntentV1_";

/// The document as served: the generated one, with the intent.v1 JSON Schema as the
/// `IntentV1` component (OpenAPI 3.1 schemas are JSON Schema 2020-12), rewritten as one
/// schema per action (`<Action>Intent`, see [`crate::intent_variants`]). Its `$defs` become
/// components `IntentV1_<name>`, and `$schema` and `$id` are left out so that references
/// resolve against the document.
pub fn document(doc: &utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).expect("the OpenAPI document serialises");
    let mut intent: Value =
        serde_json::from_str(INTENT_V1_SCHEMA).expect("the intent schema is JSON");
    relink(&mut intent);
    let intent = intent
        .as_object_mut()
        .expect("the intent schema is an object");
    intent.remove("$schema");
    intent.remove("$id");
    let defs = intent.remove("$defs").unwrap_or_default();
    let schemas = doc["components"]["schemas"]
        .as_object_mut()
        .expect("the document has schemas");
    // One schema per action, discriminated by `action`: what code generators can type
    // (crate::intent_variants says why and how).
    let (root, variants) =
        crate::intent_variants::split(intent, |name| format!("#/components/schemas/{name}"));
    schemas.insert("IntentV1".to_owned(), root);
    for variant in variants {
        schemas.insert(variant.component, variant.schema);
    }
    if let Value::Object(defs) = defs {
        for (name, def) in defs {
            schemas.insert(format!("{INTENT_DEF_PREFIX}{name}"), def);
        }
    }
    crate::intent_variants::restate_any_without_nul(schemas, INTENT_DEF_PREFIX);
    doc
}

/// `doc` (as [`document`] made it) naming where this API is reached: its public URL, so a
/// client generated from the document has a base URL to start from.
pub fn with_server(mut doc: Value, public_url: &str) -> Value {
    doc["servers"] = serde_json::json!([{
        "url": public_url,
        "description": "This fleet-api, at its public URL (API_PUBLIC_URL).",
    }]);
    doc
}

/// The JSON Schema (2020-12) of one component of the served document, standing alone: the
/// components it refers to, directly or not, come along as its `$defs`. MCP's tools
/// describe their answers with it (an output schema cannot point into another document),
/// so the HTTP API and the tools describe one view with one type.
pub fn standalone_schema(component: &str) -> serde_json::Map<String, Value> {
    let doc = document(&ApiDoc::openapi());
    let schemas = doc["components"]["schemas"]
        .as_object()
        .expect("the document has schemas");
    let mut needed = vec![component.to_owned()];
    let mut defs = serde_json::Map::new();
    while let Some(name) = needed.pop() {
        if defs.contains_key(&name) {
            continue;
        }
        let mut schema = schemas
            .get(&name)
            .unwrap_or_else(|| panic!("no component {name}"))
            .clone();
        rebase(&mut schema, &mut needed);
        defs.insert(name, schema);
    }
    let Some(Value::Object(mut root)) = defs.remove(component) else {
        panic!("the component {component} is no object schema");
    };
    if !defs.is_empty() {
        root.insert("$defs".to_owned(), Value::Object(defs));
    }
    root
}

/// Points every `#/components/schemas/<name>` at `#/$defs/<name>`, noting each name.
fn rebase(value: &mut Value, needed: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/components/schemas/") {
                    needed.push(name.to_owned());
                    *r = format!("#/$defs/{name}");
                }
            }
            map.values_mut().for_each(|v| rebase(v, needed));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rebase(v, needed)),
        _ => {}
    }
}

/// Points every `#/$defs/<name>` of the intent schema at its component.
fn relink(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/$defs/") {
                    *r = format!("#/components/schemas/{INTENT_DEF_PREFIX}{name}");
                }
            }
            map.values_mut().for_each(relink);
        }
        Value::Array(items) => items.iter_mut().for_each(relink),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use fleet_core::{ApprovalStatus, Status};
    use serde_json::Value;
    use utoipa::OpenApi;

    fn schema(name: &str) -> Value {
        let doc = serde_json::to_value(super::ApiDoc::openapi()).unwrap();
        doc["components"]["schemas"][name].clone()
    }

    fn names(schema: &Value) -> Vec<String> {
        schema["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("no enum in {schema}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn the_documented_statuses_are_cores() {
        let core: Vec<String> = Status::ALL.iter().map(|s| s.as_str().to_owned()).collect();
        assert_eq!(names(&schema("StatusName")), core);
        let core: Vec<String> = ApprovalStatus::ALL
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        assert_eq!(names(&schema("ApprovalStatusName")), core);
    }

    #[test]
    fn the_documented_codes_reasons_and_event_types_are_the_fleets() {
        let codes: Vec<String> = crate::problem_codes::codes()
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(names(&schema("ErrorCode")), codes);
        assert_eq!(
            names(&schema("RefusalReason")),
            crate::contract_enums::RefusalReason::values()
        );
        let types: Vec<String> = fleet_core::events::EventType::ALL
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
        assert_eq!(names(&schema("EventTypeName")), types);
    }

    #[test]
    fn every_refusal_reason_is_a_problem_code() {
        let codes = crate::problem_codes::codes();
        for reason in crate::contract_enums::RefusalReason::values() {
            assert!(codes.contains(&reason.as_str()), "{reason}");
        }
    }

    #[test]
    fn the_intent_component_is_the_intent_schema_with_its_definitions_as_components() {
        let doc = super::document(&super::ApiDoc::openapi());
        let schemas = &doc["components"]["schemas"];
        let intent = &schemas["IntentV1"];
        let file: Value = serde_json::from_str(crate::schemas::INTENT_V1_SCHEMA).unwrap();
        assert!(intent.get("$id").is_none() && intent.get("$defs").is_none());
        let branches = intent["oneOf"].as_array().unwrap();
        assert_eq!(
            branches.len(),
            file["properties"]["action"]["enum"]
                .as_array()
                .unwrap()
                .len()
        );
        for branch in branches {
            let name = branch["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
            let branch = &schemas[name];
            assert_eq!(branch["additionalProperties"], false, "{name}");
            for member in file["required"].as_array().unwrap() {
                assert!(
                    branch["required"].as_array().unwrap().contains(member),
                    "{name}"
                );
            }
        }
        for name in file["$defs"].as_object().unwrap().keys() {
            assert!(schemas[format!("IntentV1_{name}")].is_object(), "{name}");
        }
        let text = doc.to_string();
        assert!(!text.contains("#/$defs/"), "a reference left unresolved");
    }

    #[test]
    fn the_documented_view_is_cores_type() {
        use utoipa::PartialSchema;
        let derived = serde_json::to_value(fleet_core::OperationView::schema()).unwrap();
        assert_eq!(schema("OperationView"), derived);
        // Every member the type writes is documented, and none other.
        let written = fleet_core::view::example().to_json();
        let written: Vec<&String> = written.as_object().unwrap().keys().collect();
        let documented = schema("OperationView");
        let mut documented: Vec<&String> = documented["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        documented.sort();
        assert_eq!(documented, written);
    }

    #[test]
    fn times_are_documented_as_date_times() {
        let view = schema("OperationView");
        for field in ["created_at", "updated_at", "approval_expires_at"] {
            assert_eq!(view["properties"][field]["format"], "date-time", "{field}");
        }
        for field in ["decided_at", "unknown_since", "escalated_at", "resolved_at"] {
            let text = view["properties"][field].to_string();
            assert!(text.contains("date-time"), "{field}: {text}");
        }
    }
}
