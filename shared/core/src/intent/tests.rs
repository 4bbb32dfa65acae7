use super::*;
use serde_json::json;

/// The seed's payment, as the intent fixtures keep it.
fn seed_intent() -> Value {
    serde_json::from_str(include_str!(
        "../../tests/fixtures/intents/valid/payment-seed.json"
    ))
    .unwrap()
}

fn parse(v: &Value) -> Result<ValidIntent, IntentError> {
    parse_intent(serde_json::to_string(v).unwrap().as_bytes())
}

fn with(path: &[&str], value: Value) -> Value {
    let mut v = seed_intent();
    let (last, parents) = path.split_last().unwrap();
    let mut cursor = &mut v;
    for p in parents {
        cursor = cursor.get_mut(*p).unwrap();
    }
    cursor
        .as_object_mut()
        .unwrap()
        .insert((*last).to_owned(), value);
    v
}

fn code(v: &Value) -> &'static str {
    parse(v).unwrap_err().code()
}

#[test]
fn the_seed_example_is_valid() {
    let intent = parse(&seed_intent()).unwrap();
    assert_eq!(intent.action, Action::PaymentCreate);
    assert_eq!(
        intent.operation_id.as_str(),
        "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"
    );
    assert_eq!(intent.approval_ttl_seconds, 3600);
    assert!(intent.payload_hash.as_str().starts_with("sha256:"));
}

#[test]
fn rationale_and_supersedes_are_not_part_of_the_hash() {
    let a = parse(&seed_intent()).unwrap();
    let b = parse(&with(&["rationale"], json!("another reason"))).unwrap();
    let c = parse(&with(
        &["supersedes"],
        json!("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A9"),
    ))
    .unwrap();
    assert_eq!(a.payload_hash, b.payload_hash);
    assert_eq!(a.payload_hash, c.payload_hash);
    let d = parse(&with(&["payload", "amount_minor"], json!(1250001))).unwrap();
    assert_ne!(a.payload_hash, d.payload_hash);
}

#[test]
fn key_order_and_whitespace_do_not_change_the_hash() {
    let compact = serde_json::to_string(&seed_intent()).unwrap();
    let reordered = r#"{ "supersedes": null, "rationale": "x", "approval_ttl_seconds": 3600,
        "data_version": "inv_9182@7", "policy_version": "payments-v3",
        "payload": {"currency": "KZT", "amount_minor": 1250000, "beneficiary_id": "vendor_77", "invoice_id": "inv_9182"},
        "target": null, "provider": "payments", "action": "payment.create", "tenant_id": "org_482",
        "operation_id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8", "schema": "intent.v1" }"#;
    assert_eq!(
        parse_intent(compact.as_bytes()).unwrap().payload_hash,
        parse_intent(reordered.as_bytes()).unwrap().payload_hash
    );
}

#[test]
fn malformed_bytes_are_refused_as_malformed() {
    for bytes in [&b"{not json"[..], b"", b"\xff\xfe{}", b"[1,2]", b"\"text\""] {
        assert_eq!(
            parse_intent(bytes).unwrap_err().code(),
            "malformed",
            "{bytes:?}"
        );
    }
}

#[test]
fn oversized_messages_are_refused_before_parsing() {
    let big = vec![b' '; MAX_INTENT_BYTES + 1];
    assert_eq!(
        parse_intent(&big).unwrap_err(),
        IntentError::Oversized(MAX_INTENT_BYTES + 1)
    );
}

#[test]
fn unknown_schema_and_action_have_their_own_codes() {
    assert_eq!(
        code(&with(&["schema"], json!("intent.v99"))),
        "unsupported_schema"
    );
    assert_eq!(
        code(&with(&["action"], json!("payment.delete"))),
        "unknown_action"
    );
}

#[test]
fn money_must_be_a_positive_safe_integer_in_an_iso_currency() {
    for bad in [
        json!(12500.0),
        json!(12500.5),
        json!(1.25e6),
        json!("12500"),
        json!(0),
        json!(-5),
    ] {
        assert_eq!(
            code(&with(&["payload", "amount_minor"], bad.clone())),
            "invalid_field",
            "{bad}"
        );
    }
    // Integers no double holds exactly are refused before any field is looked at.
    for bad in [json!(9007199254740992_i64), json!(u64::MAX)] {
        assert_eq!(
            code(&with(&["payload", "amount_minor"], bad.clone())),
            "number_out_of_range",
            "{bad}"
        );
    }
    assert!(parse(&with(&["payload", "amount_minor"], json!(MAX_SAFE_INTEGER))).is_ok());
    for bad in [json!("kzt"), json!("KZ"), json!("ABC"), json!(398)] {
        assert_eq!(
            code(&with(&["payload", "currency"], bad.clone())),
            "invalid_field",
            "{bad}"
        );
    }
}

#[test]
fn missing_extra_and_ill_typed_fields_are_refused() {
    let mut missing = seed_intent();
    missing.as_object_mut().unwrap().remove("tenant_id");
    assert_eq!(code(&missing), "invalid_field");
    assert_eq!(code(&with(&["surprise"], json!(1))), "invalid_field");
    assert_eq!(
        code(&with(&["payload", "memo"], json!("x"))),
        "invalid_field"
    );
    assert_eq!(code(&with(&["tenant_id"], json!(482))), "invalid_field");
    assert_eq!(code(&with(&["tenant_id"], json!(""))), "invalid_field");
    assert_eq!(
        code(&with(&["tenant_id"], json!("org\r\nlevel=INFO"))),
        "invalid_field"
    );
    assert_eq!(
        code(&with(&["operation_id"], json!("op_123"))),
        "invalid_field"
    );
    assert_eq!(
        code(&with(&["approval_ttl_seconds"], json!(0))),
        "invalid_field"
    );
    assert_eq!(
        code(&with(&["approval_ttl_seconds"], json!(60.5))),
        "invalid_field"
    );
    assert_eq!(
        code(&with(
            &["supersedes"],
            json!("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8")
        )),
        "invalid_field"
    );
}

#[test]
fn every_action_has_its_payload_shape() {
    let refund = json!({"payment_id": "pay_1", "amount_minor": 500, "currency": "USD", "reason": "duplicate"});
    let deal = json!({"name": "Acme renewal", "amount_minor": 990000, "currency": "EUR", "stage": "proposal", "owner_id": "u_7"});
    let update = json!({"expected_version": 3, "patch": {"stage": "won"}});
    let ok = |action: &str, provider: &str, target: Value, payload: Value| {
        let mut v = seed_intent();
        v["action"] = json!(action);
        v["provider"] = json!(provider);
        v["target"] = target;
        v["payload"] = payload;
        parse(&v)
    };
    assert_eq!(
        ok("refund.create", "payments", Value::Null, refund.clone())
            .unwrap()
            .action,
        Action::RefundCreate
    );
    assert_eq!(
        ok("crm.deal.create", "crm", Value::Null, deal.clone())
            .unwrap()
            .action,
        Action::CrmDealCreate
    );
    assert_eq!(
        ok("crm.deal.update", "crm", json!("deal_1"), update.clone())
            .unwrap()
            .action,
        Action::CrmDealUpdate
    );
    // A shape that belongs to another action is refused.
    assert!(ok("refund.create", "payments", Value::Null, deal).is_err());
    // An update needs its target, an integer version and a non-empty patch.
    assert!(ok("crm.deal.update", "crm", Value::Null, update).is_err());
    assert!(ok(
        "crm.deal.update",
        "crm",
        json!("deal_1"),
        json!({"expected_version": 3, "patch": {}})
    )
    .is_err());
    assert!(ok(
        "crm.deal.update",
        "crm",
        json!("deal_1"),
        json!({"expected_version": 3.0, "patch": {"p": 1}})
    )
    .is_err());
    // Numbers that are not money may be any double.
    assert!(ok(
        "crm.deal.update",
        "crm",
        json!("deal_1"),
        json!({"expected_version": 3, "patch": {"probability": 0.35, "score": 1e21}})
    )
    .is_ok());
}

fn raw_code(text: &str) -> &'static str {
    parse_intent(text.as_bytes()).unwrap_err().code()
}

/// The seed intent as text, with `payload` replaced by `payload_text` verbatim.
fn with_raw_payload(payload_text: &str) -> String {
    let mut v = seed_intent();
    v["payload"] = json!("PAYLOAD");
    serde_json::to_string(&v)
        .unwrap()
        .replace("\"PAYLOAD\"", payload_text)
}

#[test]
fn json_that_parsers_read_differently_is_refused_with_its_own_code() {
    let seed = serde_json::to_string(&seed_intent()).unwrap();
    // A duplicate at the top level: some parsers keep the first, serde_json the last.
    let twice = seed.replacen(
        "\"tenant_id\":\"org_482\"",
        "\"tenant_id\":\"org_482\",\"tenant_id\":\"org_999\"",
        1,
    );
    assert_eq!(raw_code(&twice), "duplicate_member");
    let nested = with_raw_payload(
        r#"{"invoice_id":"inv_1","beneficiary_id":"v","amount_minor":1,"amount_minor":1000000,"currency":"KZT"}"#,
    );
    assert_eq!(raw_code(&nested), "duplicate_member");
    let lone = seed.replace("org_482", "org_\\ud800");
    assert_eq!(raw_code(&lone), "invalid_unicode");
    let huge = with_raw_payload(
        r#"{"invoice_id":"inv_1","beneficiary_id":"v","amount_minor":1e400,"currency":"KZT"}"#,
    );
    assert_eq!(raw_code(&huge), "number_out_of_range");
}

#[test]
fn nul_is_refused_anywhere_even_in_the_free_text_rationale() {
    assert_eq!(
        code(&with(&["rationale"], json!("due today\u{0}"))),
        "nul_character"
    );
    assert_eq!(
        code(&with(&["payload", "invoice_id"], json!("inv\u{0}"))),
        "nul_character"
    );
    // Other control characters remain allowed in the rationale (it is prose), not in ids.
    assert!(parse(&with(&["rationale"], json!("line one\nline two\ttabbed"))).is_ok());
    assert_eq!(
        code(&with(&["tenant_id"], json!("org\u{1}"))),
        "invalid_field"
    );
}

#[test]
fn text_limits_count_characters_not_bytes() {
    let cyrillic = "ж".repeat(MAX_TEXT_CHARS);
    assert!(
        parse(&with(&["tenant_id"], json!(cyrillic))).is_ok(),
        "256 two-byte characters fit"
    );
    assert_eq!(
        code(&with(&["tenant_id"], json!("ж".repeat(MAX_TEXT_CHARS + 1)))),
        "invalid_field"
    );
    let clefs = "\u{1d11e}".repeat(MAX_RATIONALE_CHARS);
    assert!(
        parse(&with(&["rationale"], json!(clefs))).is_ok(),
        "4096 four-byte characters fit"
    );
    assert_eq!(
        code(&with(
            &["rationale"],
            json!("x".repeat(MAX_RATIONALE_CHARS + 1))
        )),
        "invalid_field"
    );
}

#[test]
fn a_float_and_the_same_value_written_otherwise_hash_alike() {
    let update = |patch: &str| {
        let mut v = seed_intent();
        v["action"] = json!("crm.deal.update");
        v["provider"] = json!("crm");
        v["target"] = json!("deal_1");
        v["payload"] = json!("PAYLOAD");
        let text = serde_json::to_string(&v).unwrap().replace(
            "\"PAYLOAD\"",
            &format!(r#"{{"expected_version":3,"patch":{patch}}}"#),
        );
        parse_intent(text.as_bytes()).unwrap().payload_hash
    };
    // RFC 8785 hashes the double, not the digits the agent wrote.
    assert_eq!(update(r#"{"p":0.35}"#), update(r#"{"p":3.5e-1}"#));
    assert_eq!(
        update(r#"{"s":1e21}"#),
        update(r#"{"s":1000000000000000000000.0}"#)
    );
    assert_eq!(update(r#"{"s":-0.0}"#), update(r#"{"s":0}"#));
    assert_ne!(
        update(r#"{"p":0.35}"#),
        update(r#"{"p":0.350000000000001}"#)
    );
}
