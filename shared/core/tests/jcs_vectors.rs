//! Our RFC 8785 form and hash agree with two independent implementations, the Python
//! `rfc8785` package and the npm `canonicalize` package, on texts chosen for what
//! implementations get wrong: doubles (exponent thresholds, `-0`, extremes, digits that
//! need correct rounding), escapes, non-BMP characters and UTF-16 key order.
//! Regenerate with fixtures/jcs/generate.sh.

use fleet_core::strict_json::check_strict;
use fleet_core::{canonical_json, hash_value, parse_intent};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let file: Value = serde_json::from_str(include_str!("fixtures/jcs/vectors.json")).unwrap();
    let vectors = file["vectors"].as_array().unwrap().clone();
    assert!(vectors.len() >= 15, "the committed vectors are all there");
    vectors
}

fn field<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} missing in {}", v["name"]))
}

#[test]
fn both_reference_implementations_agree_with_each_other() {
    for v in vectors() {
        assert_eq!(field(&v, "python"), field(&v, "node"), "{}", v["name"]);
        assert_eq!(
            field(&v, "sha256"),
            field(&v, "node_sha256"),
            "{}",
            v["name"]
        );
    }
}

#[test]
fn canonical_values_match_python_and_node() {
    for v in vectors().iter().filter(|v| v["kind"] == "value") {
        let name = field(v, "name");
        let text = field(v, "text");
        assert_eq!(
            check_strict(text),
            Ok(()),
            "{name}: the strict reading accepts it"
        );
        let value: Value = serde_json::from_str(text).unwrap();
        let ours = canonical_json(&value);
        assert_eq!(ours, field(v, "python"), "{name}: python rfc8785");
        assert_eq!(ours, field(v, "node"), "{name}: npm canonicalize");
        assert_eq!(
            hash_value(&value).as_str(),
            field(v, "sha256"),
            "{name}: hash"
        );
    }
}

/// The snapshot's members, as `Snapshot::to_json` writes them (read off the seed's).
fn snapshot_members() -> Vec<String> {
    let seed = include_bytes!("fixtures/intents/valid/payment-seed.json");
    let snapshot = parse_intent(seed).unwrap().snapshot.to_json();
    snapshot.as_object().unwrap().keys().cloned().collect()
}

/// The snapshot an intent's hash covers: the validator's, or, for a vector whose ids the
/// identifier rule refuses (kept for their non-BMP characters), its snapshot members as
/// written.
fn snapshot_json(name: &str, text: &str) -> Value {
    match parse_intent(text.as_bytes()) {
        Ok(intent) => {
            assert_eq!(hash_value(&intent.snapshot.to_json()), intent.payload_hash);
            intent.snapshot.to_json()
        }
        Err(e) => {
            assert_eq!(e.code(), "invalid_field", "{name}: {e}");
            let Value::Object(all) = serde_json::from_str(text).unwrap() else {
                panic!("{name}: not an object")
            };
            let members = snapshot_members();
            Value::Object(
                members
                    .iter()
                    .map(|m| (m.clone(), all.get(m).cloned().unwrap_or(Value::Null)))
                    .collect(),
            )
        }
    }
}

#[test]
fn intent_payload_hashes_match_python_and_node() {
    let intents: Vec<_> = vectors()
        .into_iter()
        .filter(|v| v["kind"] == "intent")
        .collect();
    assert!(intents.len() >= 3);
    for v in &intents {
        let name = field(v, "name");
        let snapshot = snapshot_json(name, field(v, "text"));
        let ours = canonical_json(&snapshot);
        assert_eq!(ours, field(v, "python"), "{name}: python rfc8785");
        assert_eq!(ours, field(v, "node"), "{name}: npm canonicalize");
        assert_eq!(
            hash_value(&snapshot).as_str(),
            field(v, "sha256"),
            "{name}: payload hash"
        );
        assert_eq!(
            hash_value(&snapshot).as_str(),
            field(v, "node_sha256"),
            "{name}: payload hash (node)"
        );
    }
}
