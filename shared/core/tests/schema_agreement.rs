//! `shared/schemas/intent.v1.json` and the Rust validator agree on every fixture in
//! fixtures/intents, so an agent that validates with the schema before sending is refused
//! by fleet only for what the schema cannot state:
//!
//! - `valid/`: both accept;
//! - `invalid/<reason>--<case>.json`: both refuse, fleet with `<reason>`;
//! - `strict/<reason>--<case>.json`: only fleet refuses, because the rule is about the
//!   text, not the parsed value (duplicate names, lone surrogates, number ranges, `1.0`
//!   for an integer), relates two members (supersedes = operation_id), or is the part of
//!   the identifier rule a pattern cannot state (mixed scripts, confusables, characters
//!   beyond U+FFFF, TS #39's identifier characters). Where a lenient
//!   parser can read the text at all, the schema must accept it: a fixture the schema
//!   refuses belongs in `invalid/`.

mod support;

use fleet_core::currency::ISO_4217;
use fleet_core::intent::{
    MAX_APPROVAL_TTL_SECONDS, MAX_RATIONALE_CHARS, MAX_SAFE_INTEGER, MAX_TEXT_CHARS,
};
use fleet_core::parse_intent;
use serde_json::Value;
use support::{fixtures, intent_schema as schema};

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).expect("the schema itself is valid 2020-12")
}

/// The reason a fixture's name promises: the part before `--`.
fn expected_reason(name: &str) -> &str {
    name.split_once("--")
        .unwrap_or_else(|| panic!("{name}: fixture names are <reason>--<case>"))
        .0
}

fn schema_errors(validator: &jsonschema::Validator, bytes: &[u8]) -> Option<Vec<String>> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    Some(
        validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect(),
    )
}

#[test]
fn valid_fixtures_pass_both() {
    let validator = validator();
    let all = fixtures("valid");
    assert!(all.len() >= 30, "{} valid fixtures", all.len());
    for (name, bytes) in &all {
        if let Err(e) = parse_intent(bytes) {
            panic!("{name}: the Rust validator refuses it: {e}");
        }
        let errors = schema_errors(&validator, bytes).unwrap_or_else(|| panic!("{name}: not JSON"));
        assert!(
            errors.is_empty(),
            "{name}: the schema refuses it: {errors:?}"
        );
    }
}

#[test]
fn invalid_fixtures_fail_both_with_the_named_reason() {
    let validator = validator();
    let all = fixtures("invalid");
    assert!(all.len() >= 80, "{} invalid fixtures", all.len());
    for (name, bytes) in &all {
        let refusal = parse_intent(bytes)
            .err()
            .unwrap_or_else(|| panic!("{name}: the Rust validator accepts it"));
        assert_eq!(refusal.code(), expected_reason(name), "{name}: {refusal}");
        let errors = schema_errors(&validator, bytes)
            .unwrap_or_else(|| panic!("{name}: not JSON; it belongs in strict/"));
        assert!(!errors.is_empty(), "{name}: the schema accepts it");
    }
}

#[test]
fn strict_fixtures_are_refused_by_fleet_beyond_what_the_schema_can_state() {
    let validator = validator();
    let all = fixtures("strict");
    assert!(all.len() >= 15, "{} strict fixtures", all.len());
    for (name, bytes) in &all {
        let refusal = parse_intent(bytes)
            .err()
            .unwrap_or_else(|| panic!("{name}: the Rust validator accepts it"));
        assert_eq!(refusal.code(), expected_reason(name), "{name}: {refusal}");
        if let Some(errors) = schema_errors(&validator, bytes) {
            assert!(
                errors.is_empty(),
                "{name}: the schema refuses it too, so it belongs in invalid/: {errors:?}"
            );
        }
    }
}

#[test]
fn every_refusal_reason_of_the_validator_has_a_fixture() {
    let mut reasons: Vec<String> = ["invalid", "strict"]
        .iter()
        .flat_map(|k| fixtures(k))
        .map(|(name, _)| expected_reason(&name).to_owned())
        .collect();
    reasons.sort();
    reasons.dedup();
    // `oversized` is checked before parsing, on the message's length alone.
    let expected = [
        "duplicate_member",
        "invalid_field",
        "invalid_unicode",
        "malformed",
        "nul_character",
        "number_out_of_range",
        "unknown_action",
        "unsupported_schema",
    ];
    assert_eq!(reasons, expected);
}

#[test]
fn the_schema_states_the_validators_limits() {
    let s = schema();
    let defs = &s["$defs"];
    assert_eq!(defs["text"]["maxLength"], MAX_TEXT_CHARS);
    assert_eq!(defs["text"]["minLength"], 1);
    assert_eq!(defs["identifier"]["maxLength"], MAX_TEXT_CHARS);
    assert_eq!(defs["identifier"]["minLength"], 1);
    assert_eq!(
        defs["identifier"]["pattern"],
        fleet_core::members::schemas::identifier_pattern(),
        "the pattern names the hidden characters of fleet_core::visible::is_hidden"
    );
    assert_eq!(
        defs["identifier"]["not"]["pattern"],
        fleet_core::members::schemas::ONLY_DOTS_PATTERN,
        "the schema refuses the ids made of dots only, as the identifier rule does"
    );
    assert_eq!(
        s["properties"]["rationale"]["maxLength"],
        MAX_RATIONALE_CHARS
    );
    assert_eq!(
        s["properties"]["approval_ttl_seconds"]["maximum"],
        MAX_APPROVAL_TTL_SECONDS
    );
    assert_eq!(defs["amount_minor"]["maximum"], MAX_SAFE_INTEGER);
    assert_eq!(
        defs["deal_update"]["properties"]["expected_version"]["maximum"],
        MAX_SAFE_INTEGER
    );
    let codes: Vec<&str> = defs["currency"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(codes, *ISO_4217);
    let actions: Vec<&str> = s["properties"]["action"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(actions, fleet_core::Action::ALL.map(|a| a.wire_name()));
}
