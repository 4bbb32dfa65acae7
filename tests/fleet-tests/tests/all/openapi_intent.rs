//! The OpenAPI document's `IntentV1` (one schema per action, discriminated by `action`,
//! derived from `shared/schemas/intent.v1.json` when the API is built) says what the file
//! says: every intent fixture (valid, invalid, and those only fleet's stricter reader
//! refuses) gets the same verdict from both, as served by a real fleet-api. The one rule
//! the document adds is the catalogue's provider per action: an intent naming another
//! provider, which the file lets through to the intake's `unsupported_provider`, the
//! document refuses. And the document names where the API is reached (`servers`), and
//! types every answer a client reads.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use fleet_core::Action;
use fleet_tests::TestFleet;
use serde_json::{json, Value};

fn fixtures() -> Vec<(String, Value)> {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/core/tests/fixtures/intents");
    let mut out = Vec::new();
    for kind in ["valid", "invalid", "strict"] {
        let dir: PathBuf = root.join(kind);
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            // Fixtures whose text no JSON parser reads (lone surrogates, say) are about the
            // text, which neither schema sees.
            if let Ok(value) = serde_json::from_slice::<Value>(&fs::read(&path).unwrap()) {
                let name = format!("{kind}/{}", path.file_name().unwrap().to_string_lossy());
                out.push((name, value));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The document's `IntentV1` as a schema of its own: the components stay where the
/// document's references point (`#/components/schemas/…`).
fn documented_intent(doc: &Value) -> jsonschema::Validator {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/components/schemas/IntentV1",
        "components": {"schemas": doc["components"]["schemas"].clone()},
    });
    jsonschema::draft202012::new(&schema).expect("IntentV1 is a valid 2020-12 schema")
}

/// Whether `intent` names another provider than the catalogue's for its action.
fn names_another_provider(intent: &Value) -> bool {
    let action = intent["action"].as_str().and_then(Action::parse);
    match (action, intent["provider"].as_str()) {
        (Some(action), Some(provider)) => provider != action.spec().provider.as_str(),
        _ => false,
    }
}

#[tokio::test]
async fn the_documented_intent_and_the_intent_schema_give_every_fixture_the_same_verdict() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let doc = fleet.get_json(&api.url("/openapi.json")).await;
    assert_eq!(doc["servers"][0]["url"], json!(api.base_url));

    let file: Value = serde_json::from_str(
        &fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/schemas/intent.v1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let file = jsonschema::draft202012::new(&file).unwrap();
    let documented = documented_intent(&doc);

    let mut valid_per_action: BTreeMap<String, usize> = BTreeMap::new();
    let mut disagreements = Vec::new();
    for (name, intent) in fixtures() {
        let by_file = file.is_valid(&intent);
        let by_document = documented.is_valid(&intent);
        let expected = by_file && !names_another_provider(&intent);
        if by_document != expected {
            disagreements.push(format!(
                "{name}: the file says {by_file}, the document {by_document}"
            ));
        }
        if by_document {
            *valid_per_action
                .entry(intent["action"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    // Not a vacuous agreement: the document takes an intent of every action.
    for action in Action::ALL {
        assert!(
            valid_per_action.contains_key(action.wire_name()),
            "no fixture of {} is valid: {valid_per_action:?}",
            action.wire_name()
        );
    }

    // Each branch is the typed one: a string amount, or the right payload under another
    // action, is refused by the document as by the file.
    let mut payment: Value = fixtures()
        .into_iter()
        .map(|(_, v)| v)
        .find(|v| v["action"] == "payment.create" && documented.is_valid(v))
        .unwrap();
    assert!(file.is_valid(&payment));
    payment["payload"]["amount_minor"] = json!("oops");
    assert!(!documented.is_valid(&payment) && !file.is_valid(&payment));
    payment["payload"]["amount_minor"] = json!(100);
    // Another provider than the action's: the file lets it through to the intake's
    // `unsupported_provider`, the document refuses it.
    payment["provider"] = json!("crm");
    assert!(file.is_valid(&payment) && !documented.is_valid(&payment));
    payment["provider"] = json!("payments");
    assert!(file.is_valid(&payment) && documented.is_valid(&payment));
    payment["action"] = json!("refund.create");
    assert!(!documented.is_valid(&payment) && !file.is_valid(&payment));

    // A CRM patch's values: the document restates the file's recursive rule (no U+0000 in
    // any string or member name, at any depth) in a form generators read; same verdicts.
    let mut update: Value = fixtures()
        .into_iter()
        .map(|(_, v)| v)
        .find(|v| v["action"] == "crm.deal.update" && documented.is_valid(v))
        .unwrap();
    for (patch, valid) in [
        (json!({"stage": "won"}), true),
        (json!({"n": 1e21, "b": true, "z": null, "s": ""}), true),
        (json!({"notes": {"a": ["x", {"b": "c"}], "d": []}}), true),
        (json!({"notes": "a\u{0}b"}), false),
        (json!({"notes": ["ok", ["deep\u{0}"]]}), false),
        (json!({"notes": {"k\u{0}": 1}}), false),
        (json!({"notes": [{"x": {"y\u{0}": null}}]}), false),
        (json!({"a\u{0}": 1}), false),
    ] {
        update["payload"]["patch"] = patch.clone();
        assert_eq!(file.is_valid(&update), valid, "the file on {patch}");
        assert_eq!(
            documented.is_valid(&update),
            valid,
            "the document on {patch}"
        );
    }
    fleet.stop().await;
}

#[tokio::test]
async fn every_successful_answer_with_a_body_is_typed() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let doc = fleet.get_json(&api.url("/openapi.json")).await;
    let mut untyped = Vec::new();
    for (path, methods) in doc["paths"].as_object().unwrap() {
        for (method, operation) in methods.as_object().unwrap() {
            let Some(responses) = operation["responses"].as_object() else {
                continue;
            };
            for (status, response) in responses {
                if !status.starts_with('2') || status == "204" {
                    continue;
                }
                let typed = response["content"].as_object().is_some_and(|content| {
                    !content.is_empty()
                        && content.values().all(|media| {
                            let schema = &media["schema"];
                            schema["$ref"].is_string() || schema["type"].is_string()
                        })
                });
                if !typed {
                    untyped.push(format!("{method} {path} {status}"));
                }
            }
        }
    }
    assert!(
        untyped.is_empty(),
        "answers without a typed body: {untyped:?}"
    );
    fleet.stop().await;
}
