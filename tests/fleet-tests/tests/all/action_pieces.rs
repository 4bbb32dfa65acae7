//! Every action of the catalogue has the pieces outside its payload module that make it
//! work end to end: the contract's JSON Schema, intent fixtures, the approver's line, a
//! route of the provider simulator, a quorum policy, and the database's list of actions.
//! Each is a separate place a new action must be written into (docs/adding-an-action.md);
//! this test names the action and the piece it lacks. It reads files and builds requests
//! only: no database, broker or provider is needed.

use std::path::{Path, PathBuf};

use fleet_core::catalogue::{Dialect, Target};
use fleet_core::{parse_intent, ActionSpec, Subject, ValidIntent, CATALOGUE};
use fleet_provider_sim::Route;
use fleet_providers::{Operation, ProviderConfigs};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The files of `dir`, in name order.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("an entry").path())
        .collect();
    out.sort();
    out
}

const FIXTURES: &str = "shared/core/tests/fixtures/intents";

/// The valid fixtures, parsed.
fn valid_intents() -> Vec<ValidIntent> {
    files(&root().join(FIXTURES).join("valid"))
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).expect("a fixture");
            parse_intent(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()))
        })
        .collect()
}

/// The `action` member of each invalid fixture that is a JSON object naming one.
fn invalid_fixture_actions() -> Vec<String> {
    files(&root().join(FIXTURES).join("invalid"))
        .iter()
        .filter_map(|p| serde_json::from_str::<Value>(&read(p)).ok())
        .filter_map(|v| v.get("action").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// What intent.v1.json says of the action, or the piece it lacks.
fn schema_gap(schema: &Value, spec: &ActionSpec) -> Option<String> {
    let w = spec.wire_name;
    let listed = schema["properties"]["action"]["enum"]
        .as_array()
        .is_some_and(|e| e.iter().any(|a| a == w));
    if !listed {
        return Some("its wire name in `properties.action.enum`".into());
    }
    // The payload rules are one chain of `if`/`then`/`else`, an action's rule per link.
    let rules = std::iter::successors(Some(schema), |r| r.get("else"));
    let Some(rule) = rules
        .take_while(|r| r.get("if").is_some())
        .find(|r| r["if"]["properties"]["action"]["const"] == w)
    else {
        return Some("an `if`/`then` rule for it".into());
    };
    let reference = rule["then"]["properties"]["payload"]["$ref"]
        .as_str()
        .unwrap_or_default();
    let def = reference.strip_prefix("#/$defs/").unwrap_or_default();
    if def.is_empty() || schema["$defs"].get(def).is_none() {
        return Some(format!(
            "the `$defs` entry its `if`/`then` rule names for the payload ({reference:?})"
        ));
    }
    let requires_target = rule["then"]["required"]
        .as_array()
        .is_some_and(|r| r.iter().any(|m| m == "target"));
    if requires_target != matches!(spec.target, Target::Required(_)) {
        return Some(format!(
            "`required: [\"target\"]` in its `if`/`then` rule exactly when the entry requires a target (the rule says {requires_target})"
        ));
    }
    None
}

/// The action list of the newest migration that defines `operations_snapshot_is_valid`
/// (the database's own check of the action at insert), with that migration's name.
fn migrated_actions() -> (String, String) {
    let mut newest = None;
    for path in files(&root().join("migrations")) {
        let sql = read(&path);
        if sql.contains("FUNCTION operations_snapshot_is_valid()") {
            newest = Some((path, sql));
        }
    }
    let (path, sql) = newest.expect("a migration defining operations_snapshot_is_valid");
    let list = sql
        .split_once("NEW.action NOT IN (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(list, _)| list.to_owned())
        .expect("the action list of operations_snapshot_is_valid");
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    (name, list)
}

/// The actions some quorum policy under shared/policies names.
fn policy_actions() -> Vec<String> {
    let mut out = Vec::new();
    for path in files(&root().join("shared/policies")) {
        if path.extension().is_some_and(|e| e == "toml") {
            let doc: toml::Table = read(&path).parse().expect("a policy file");
            if let Some(actions) = doc.get("actions").and_then(toml::Value::as_table) {
                out.extend(actions.keys().cloned());
            }
        }
    }
    out
}

#[test]
fn every_action_has_its_schema_fixtures_wording_simulator_route_policy_and_migration() {
    let schema: Value =
        serde_json::from_str(&read(&root().join("shared/schemas/intent.v1.json"))).unwrap();
    let valid = valid_intents();
    let invalid = invalid_fixture_actions();
    let (migration, migrated) = migrated_actions();
    let policies = policy_actions();
    let providers = ProviderConfigs::all_at("http://127.0.0.1:9", "sk_test", 1_000, 0, 0)
        .connect()
        .unwrap();
    // An action only Stripe serves (a charge) is built by the payments provider spoken as
    // Stripe, and served by localstripe and the Stripe simulator rather than the reference
    // simulator's routes (tests/fleet-tests/tests/all/stripe_charges.rs runs it end to end).
    let mut stripe = ProviderConfigs::all_at("http://127.0.0.1:9", "sk_test", 1_000, 0, 0);
    stripe.provider_mut("payments").dialect = Dialect::Stripe { search: false };
    let stripe = stripe.connect().unwrap();

    let mut missing = Vec::new();
    for spec in CATALOGUE {
        let w = spec.wire_name;
        let mut lacks = |piece: String| missing.push(format!("{w}: {piece}"));

        if let Some(gap) = schema_gap(&schema, spec) {
            lacks(format!("shared/schemas/intent.v1.json lacks {gap}"));
        }

        let fixture = valid.iter().find(|i| i.action == spec.action);
        if fixture.is_none() {
            lacks(format!("no fixture in {FIXTURES}/valid/ names it"));
        }
        if !invalid.iter().any(|a| a == w) {
            lacks(format!(
                "no fixture in {FIXTURES}/invalid/ names it (what the schema and the reader both refuse)"
            ));
        }

        if let Some(intent) = fixture {
            let s = &intent.snapshot;
            if spec.describe(s.target.as_deref(), &s.payload).is_none() {
                lacks(
                    "no approver's line: its `describe` says nothing of its valid fixture".into(),
                );
            }
            let op = Operation {
                action: spec.action,
                tenant: fleet_tests::TENANT,
                subject: Subject {
                    reference: &s.operation_id,
                    target: s.target.as_deref(),
                    payload: &s.payload,
                },
                idempotency_key: &s.operation_id,
                payee_version: None,
            };
            let only_stripe = fleet_providers::stripe::ONLY_STRIPE.contains(&spec.action);
            let providers = if only_stripe { &stripe } else { &providers };
            match providers.serving(&op).map(|p| p.request(&op)) {
                None => lacks(format!(
                    "no adapter in shared/providers serves provider {}",
                    spec.provider.as_str()
                )),
                Some(Err(_)) => lacks(format!(
                    "the {} adapter builds no request for its valid fixture",
                    spec.provider.as_str()
                )),
                Some(Ok(_)) if only_stripe => {}
                Some(Ok(request)) => {
                    let path = format!("/{}", request.path.join("/"));
                    let method = request.method.as_str();
                    match Route::matching(method, &path) {
                        Some(route) if route.creates() => {}
                        _ => lacks(format!(
                            "the simulator (tests/provider-sim/src/route.rs) has no route that takes its request {method} {path}"
                        )),
                    }
                }
            }
        }

        if !policies.iter().any(|a| a == w) {
            lacks("no policy file in shared/policies names it under `[actions.\"…\"]`".into());
        }

        if !migrated.contains(&format!("'{w}'")) {
            lacks(format!(
                "the action list of operations_snapshot_is_valid ({migration}, the newest migration defining it) does not admit it: a new migration must redefine it"
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "actions lacking a piece (docs/adding-an-action.md):\n{}",
        missing.join("\n")
    );
}
