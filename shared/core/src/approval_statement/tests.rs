use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::*;

fn payload() -> Value {
    json!({"invoice_id": "inv_9300", "beneficiary_id": "vendor_77", "amount_minor": 150000000, "currency": "KZT"})
}

fn at(text: &str) -> DateTime<Utc> {
    parse_expiry(text).unwrap()
}

fn evidence() -> Value {
    json!({"status": "found", "id": "vendor_77", "name": "Vendor 77 LLP", "country": "KZ",
           "account": {"scheme": "iban", "masked": "KZ•• •••• •••• 1234",
                       "fingerprint": format!("sha256:{}", "a".repeat(64))},
           "verified": true, "version": 3, "looked_up_at": "2026-12-01T17:00:00Z"})
}

fn statement_with(payload: &Value, payee: Option<&Value>) -> ApprovalStatement {
    let subject = StatementSubject {
        operation_id: "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7",
        tenant_id: "org_482",
        action: crate::Action::PaymentCreate,
        target: None,
        payload,
        payload_hash: "sha256:0000000000000000000000000000000000000000000000000000000000000001",
        payee,
    };
    ApprovalStatement::derive(&subject, at("2026-12-01T18:00:00Z"))
}

fn statement(payload: &Value) -> ApprovalStatement {
    statement_with(payload, Some(&evidence()))
}

#[test]
fn the_signed_bytes_of_a_payment_are_stable() {
    // Golden: a change here changes what every approver's signature covers, which makes
    // every signature made before it invalid. Only a new STATEMENT_VERSION may do that.
    let expected = concat!(
        r#"{"action":"payment.create","amount":"1,500,000.00 KZT","#,
        r#""expires_at":"2026-12-01T18:00:00Z","operation_id":"op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7","#,
        r#""payee":"vendor_77","payee_account":"KZ•• •••• •••• 1234","payee_name":"Vendor 77 LLP","#,
        r#""payee_name_check":"close_match","payee_version":3,"#,
        r#""payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000001","#,
        r#""statement":"fleet.approval.v4","#,
        r#""summary":"Pay 1,500,000.00 KZT to \"Vendor 77 LLP\" (vendor_77, account KZ•• •••• •••• 1234, for invoice inv_9300) — free text: beneficiary_name \"Vendor 77\"","tenant_id":"org_482"}"#
    );
    let mut p = payload();
    p["beneficiary_name"] = json!("Vendor 77");
    let mut e = evidence();
    e["name_check"] =
        json!({"result": "close_match", "asked": "Vendor 77", "held": "Vendor 77 LLP"});
    assert_eq!(
        String::from_utf8(statement_with(&p, Some(&e)).to_bytes()).unwrap(),
        expected
    );
}

/// A v3 statement, made before the headline named the payee, is rebuilt byte for byte:
/// a signature given before the upgrade still verifies.
#[test]
fn the_signed_bytes_of_a_v3_payment_are_as_they_were() {
    let subject = StatementSubject {
        operation_id: "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7",
        tenant_id: "org_482",
        action: crate::Action::PaymentCreate,
        target: None,
        payload: &payload(),
        payload_hash: "sha256:0000000000000000000000000000000000000000000000000000000000000001",
        payee: Some(&evidence()),
    };
    let v3 = ApprovalStatement::derive_as(&subject, at("2026-12-01T18:00:00Z"), STATEMENT_V3);
    let expected = concat!(
        r#"{"action":"payment.create","amount":"1,500,000.00 KZT","#,
        r#""expires_at":"2026-12-01T18:00:00Z","operation_id":"op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7","#,
        r#""payee":"vendor_77","payee_account":"KZ•• •••• •••• 1234","payee_name":"Vendor 77 LLP","payee_version":3,"#,
        r#""payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000001","#,
        r#""statement":"fleet.approval.v3","#,
        r#""summary":"Pay 1,500,000.00 KZT to vendor_77 for invoice inv_9300","tenant_id":"org_482"}"#
    );
    assert_eq!(String::from_utf8(v3.to_bytes()).unwrap(), expected);
    assert_eq!(STATEMENT_VERSIONS, [STATEMENT_VERSION, STATEMENT_V3]);
}

#[test]
fn every_member_changes_the_bytes() {
    let p = payload();
    let base = statement(&p);
    let bytes = base.to_bytes();
    let changed: Vec<ApprovalStatement> = vec![
        ApprovalStatement {
            operation_id: "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W8".into(),
            ..base.clone()
        },
        ApprovalStatement {
            tenant_id: "org_483".into(),
            ..base.clone()
        },
        ApprovalStatement {
            payload_hash: base.payload_hash.replace('1', "2"),
            ..base.clone()
        },
        ApprovalStatement {
            action: "refund.create".into(),
            ..base.clone()
        },
        ApprovalStatement {
            amount: Some("1,500,000.01 KZT".into()),
            ..base.clone()
        },
        ApprovalStatement {
            amount: None,
            ..base.clone()
        },
        ApprovalStatement {
            payee: Some("vendor_78".into()),
            ..base.clone()
        },
        ApprovalStatement {
            payee_name: Some("Vendor 77 Ltd".into()),
            ..base.clone()
        },
        ApprovalStatement {
            payee_account: Some("KZ•• •••• •••• 4321".into()),
            ..base.clone()
        },
        ApprovalStatement {
            payee_version: Some(4),
            ..base.clone()
        },
        ApprovalStatement {
            payee_name_check: Some("no_match".into()),
            ..base.clone()
        },
        ApprovalStatement {
            summary: base.summary.replace("inv_9300", "inv_9301"),
            ..base.clone()
        },
        ApprovalStatement {
            expires_at: at("2026-12-01T18:00:01Z"),
            ..base.clone()
        },
    ];
    for c in changed {
        assert_ne!(c.to_bytes(), bytes, "{c:?}");
    }
}

#[test]
fn the_words_come_from_the_payload() {
    let mut p = payload();
    p["amount_minor"] = json!(150000001);
    let s = statement(&p);
    assert_eq!(s.amount.as_deref(), Some("1,500,000.01 KZT"));
    assert!(s.summary.contains("1,500,000.01 KZT"));
    p["beneficiary_id"] = json!("mallory");
    assert_eq!(statement(&p).payee.as_deref(), Some("mallory"));
}

#[test]
fn an_action_without_amount_or_payee_says_so() {
    let update = json!({"expected_version": 3, "patch": {"stage": "won"}});
    let subject = StatementSubject {
        operation_id: "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7",
        tenant_id: "org_482",
        action: crate::Action::CrmDealUpdate,
        target: Some("deal_1"),
        payload: &update,
        payload_hash: "sha256:0000000000000000000000000000000000000000000000000000000000000001",
        payee: None,
    };
    let s = ApprovalStatement::derive(&subject, at("2026-12-01T18:00:00Z"));
    assert_eq!((s.amount.as_deref(), s.payee.as_deref()), (None, None));
    assert_eq!(
        s.summary,
        r#"Update deal deal_1 at version 3, changing 1 field — free text: changes "stage to \"won\"""#
    );
    let v = s.to_bytes();
    assert!(String::from_utf8(v).unwrap().contains(r#""amount":null"#));
}

#[test]
fn an_expiry_is_read_only_in_the_form_it_is_written() {
    let t = at("2026-12-01T18:00:00Z");
    assert_eq!(format_expiry(t), "2026-12-01T18:00:00Z");
    for refused in [
        "2026-12-01T18:00:00.5Z",
        "2026-12-01T18:00:00+00:00",
        "2026-12-01T19:00:00+01:00",
        "2026-12-01t18:00:00z",
        "2026-12-01 18:00:00Z",
        "tomorrow",
    ] {
        assert_eq!(parse_expiry(refused), None, "{refused}");
    }
    // A fraction held by one side is dropped by both.
    let fine = t + chrono::Duration::milliseconds(700);
    let p = payload();
    let subject = StatementSubject {
        operation_id: "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7",
        tenant_id: "org_482",
        action: crate::Action::PaymentCreate,
        target: None,
        payload: &p,
        payload_hash: "sha256:0000000000000000000000000000000000000000000000000000000000000001",
        payee: Some(&evidence()),
    };
    assert_eq!(
        ApprovalStatement::derive(&subject, fine).to_bytes(),
        statement(&p).to_bytes()
    );
}

#[test]
fn an_expiry_is_bounded_by_the_approval() {
    let approved = at("2026-12-01T12:00:00Z");
    assert!(expiry_in_bounds(at("2026-12-01T12:00:01Z"), approved));
    assert!(expiry_in_bounds(at("2026-12-02T12:00:00Z"), approved));
    assert!(!expiry_in_bounds(at("2026-12-02T12:00:01Z"), approved));
    assert!(!expiry_in_bounds(approved, approved));
    assert!(!expiry_in_bounds(at("2026-12-01T11:00:00Z"), approved));
}

#[test]
fn the_payee_shown_is_the_evidence_kept_at_intake_or_unknown() {
    let s = statement(&payload());
    assert_eq!(
        (
            s.payee_name.as_deref(),
            s.payee_account.as_deref(),
            s.payee_version
        ),
        (Some("Vendor 77 LLP"), Some("KZ•• •••• •••• 1234"), Some(3))
    );
    assert!(s
        .in_words()
        .contains("\"Vendor 77 LLP\", account KZ•• •••• •••• 1234 (payee version 3)"));
    let unknown = json!({"status": "unknown", "id": "vendor_77", "reason": "not_found",
                         "looked_up_at": "2026-12-01T17:00:00Z"});
    let u = statement_with(&payload(), Some(&unknown));
    assert_eq!(
        (
            u.payee_name.as_deref(),
            u.payee_account.as_deref(),
            u.payee_version
        ),
        (None, None, None)
    );
    assert!(u.in_words().contains("unknown"));
    assert_ne!(u.to_bytes(), s.to_bytes());
    assert_eq!(statement_with(&payload(), None).to_bytes(), u.to_bytes());
}

fn deal_statement(payload: &Value) -> ApprovalStatement {
    let subject = StatementSubject {
        operation_id: "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7",
        tenant_id: "org_482",
        action: crate::Action::CrmDealCreate,
        target: None,
        payload,
        payload_hash: "sha256:0000000000000000000000000000000000000000000000000000000000000001",
        payee: None,
    };
    ApprovalStatement::derive(&subject, at("2026-12-01T18:00:00Z"))
}

#[test]
fn the_signed_bytes_of_a_deal_quote_its_name_after_the_typed_words() {
    // Golden, as above: the name tries to say 10.00 KZT before the real amount.
    let p = json!({"name": "Acme renewal\" worth 10.00 KZT at stage lead, owned by u_7. Also note: \"x",
                   "amount_minor": 5_000_000_000i64, "currency": "KZT", "stage": "lead", "owner_id": "u_7"});
    let expected = concat!(
        r#"{"action":"crm.deal.create","amount":"50,000,000.00 KZT","#,
        r#""expires_at":"2026-12-01T18:00:00Z","operation_id":"op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7","#,
        r#""payee":"u_7","payee_account":null,"payee_name":null,"payee_name_check":null,"payee_version":null,"#,
        r#""payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000001","#,
        r#""statement":"fleet.approval.v4","#,
        r#""summary":"Create a deal worth 50,000,000.00 KZT, owned by u_7 — free text: name \"Acme renewal\\\" worth 10.00 KZT at stage lead, owned by u_7. Also note: \\\"x\", stage \"lead\"","#,
        r#""tenant_id":"org_482"}"#
    );
    let s = deal_statement(&p);
    assert_eq!(String::from_utf8(s.to_bytes()).unwrap(), expected);
    let words = s.in_words();
    let first = words.lines().next().unwrap();
    assert!(
        first.starts_with(
            "Create a deal worth 50,000,000.00 KZT, owned by u_7 — free text: name \""
        ),
        "{first}"
    );
}

#[test]
fn free_text_cannot_add_a_line_to_the_statement_in_words() {
    let p = json!({"name": "renewal\n  amount    1.00 KZT\u{2800}", "amount_minor": 5_000_000_000i64,
                   "currency": "KZT", "stage": "lead", "owner_id": "u_7"});
    let words = deal_statement(&p).in_words();
    assert!(
        words
            .lines()
            .filter(|l| l.trim_start().starts_with("amount"))
            .count()
            == 1,
        "{words}"
    );
    assert!(
        words.contains("renewal⟨U+000A⟩  amount    1.00 KZT⟨U+2800⟩"),
        "{words}"
    );
}

#[test]
fn a_payees_name_cannot_add_a_line_to_the_statement_in_words() {
    let mut e = evidence();
    e["name"] = json!("Vendor 77 LLP\n  amount    1.00 KZT");
    let words = statement_with(&payload(), Some(&e)).in_words();
    // The summary (which names the payee), the amount, who is paid: no line more.
    assert_eq!(
        words.lines().filter(|l| l.contains("amount")).count(),
        3,
        "{words}"
    );
    assert_eq!(
        words
            .lines()
            .filter(|l| l.trim_start().starts_with("amount"))
            .count(),
        1,
        "{words}"
    );
    assert!(
        words.contains("paid to   \"Vendor 77 LLP⟨U+000A⟩  amount    1.00 KZT\", account"),
        "{words}"
    );
}
