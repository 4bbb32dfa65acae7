//! The summary keeps what the fleet reads and drops everything else, and judging the
//! summary gives the same verdict as judging the whole body.

use serde_json::json;

use super::*;
use crate::actions::deal_create::classify_deal_create;
use crate::actions::deal_update::classify_deal_update;
use crate::actions::payment_create::classify_payment;
use crate::lookup::Found;
use crate::outcome::{CallResult, ProviderAnswer};

/// A payment as a provider returns it, with the customer data a real one echoes.
fn payment_with_customer_data(status: &str) -> Value {
    json!({
        "id": "pay_01J",
        "object": "payment",
        "status": status,
        "amount_minor": 1_250_000,
        "currency": "KZT",
        "reference": "op_01J",
        "failure_code": if status == "failed" { json!("account_closed") } else { Value::Null },
        "beneficiary_id": "vendor_77",
        "beneficiary_name": "Aigerim Nurlanovna",
        "invoice_id": "inv_9182",
        "description": "Office rent, flat 12, 5 Abay Ave",
        "metadata": {"email": "aigerim@example.kz"},
        "billing_details": {"name": "Aigerim Nurlanovna", "phone": "+7 701 000 0000"},
        "created_at": "2025-01-01T00:00:00Z"
    })
}

#[test]
fn a_payment_keeps_ids_status_and_money_and_drops_customer_data() {
    let summary = answer_summary(&payment_with_customer_data("succeeded")).unwrap();
    assert_eq!(
        summary,
        json!({"id": "pay_01J", "status": "succeeded", "amount_minor": 1_250_000, "currency": "KZT", "reference": "op_01J"})
    );
    let failed = answer_summary(&payment_with_customer_data("failed")).unwrap();
    assert_eq!(failed["failure_code"], "account_closed");
    let text = failed.to_string();
    for leaked in [
        "Aigerim",
        "Abay",
        "example.kz",
        "+7 701",
        "vendor_77",
        "inv_9182",
        "beneficiary",
        "description",
        "metadata",
    ] {
        assert!(!text.contains(leaked), "{leaked} kept in {text}");
    }
}

#[test]
fn an_error_keeps_its_type_code_param_and_current_version_only() {
    let body = json!({"error": {
        "type": "invalid_request", "code": "amount_too_small", "param": "amount_minor",
        "message": "Amount for Aigerim Nurlanovna is too small", "doc_url": "https://example.com/x"
    }, "request_log_url": "https://example.com/logs/1"});
    assert_eq!(
        answer_summary(&body).unwrap(),
        json!({"error": {"type": "invalid_request", "code": "amount_too_small", "param": "amount_minor"}})
    );
    let conflict = json!({"error": {"type": "version_conflict", "current_version": 8, "deal": {"name": "Acme"}}});
    assert_eq!(
        answer_summary(&conflict).unwrap(),
        json!({"error": {"type": "version_conflict", "current_version": 8}})
    );
}

#[test]
fn refunds_and_deals_keep_what_links_them() {
    let refund = json!({"id": "re_1", "status": "pending", "payment_id": "pay_1", "amount_minor": 500, "currency": "KZT",
                        "reference": "op_r", "reason": "customer Aigerim asked"});
    assert_eq!(
        answer_summary(&refund).unwrap(),
        json!({"id": "re_1", "status": "pending", "payment_id": "pay_1", "amount_minor": 500, "currency": "KZT", "reference": "op_r"})
    );
    let deal = json!({"id": "deal_1", "version": 4, "external_id": "op_d", "name": "Acme renewal", "owner_id": "u_7",
                      "stage": "won", "amount_minor": 990_000, "currency": "EUR"});
    assert_eq!(
        answer_summary(&deal).unwrap(),
        json!({"id": "deal_1", "version": 4, "external_id": "op_d", "amount_minor": 990_000, "currency": "EUR"})
    );
    assert_eq!(
        answer_summary(&json!({"status": "queued"})).unwrap(),
        json!({"status": "queued"})
    );
}

#[test]
fn nothing_nested_survives_under_an_allowed_name() {
    let body = json!({"id": {"name": "Aigerim"}, "status": ["succeeded", "Aigerim"], "currency": null,
                      "error": {"code": {"text": "Aigerim"}}});
    assert_eq!(answer_summary(&body), None);
}

#[test]
fn a_body_that_is_not_an_object_or_holds_nothing_kept_has_no_summary() {
    for body in [
        Value::Null,
        json!("Internal error for Aigerim"),
        json!([{"id": "pay_1"}]),
        json!(7),
        json!({}),
        json!({"message": "x"}),
    ] {
        assert_eq!(answer_summary(&body), None, "{body}");
    }
}

fn answer(status: u16, body: Value) -> CallResult {
    CallResult::Answer(ProviderAnswer {
        status,
        replayed: false,
        request_id: Some("req_1".into()),
        retry_after: None,
        should_retry: None,
        body,
    })
}

#[test]
fn every_classifier_and_lookup_reads_the_same_verdict_from_the_summary_as_from_the_body() {
    let bodies = [
        payment_with_customer_data("succeeded"),
        payment_with_customer_data("pending"),
        payment_with_customer_data("failed"),
        json!({"error": {"type": "payment_rejected", "code": "account_closed", "message": "Aigerim's account"}}),
        json!({"error": {"type": "idempotency_error", "code": "idempotency_key_reused"}}),
        json!({"error": {"type": "invalid_request", "code": "amount_too_small", "param": "amount_minor"}}),
        json!({"error": {"type": "version_conflict", "current_version": 8}}),
        json!({"id": "deal_1", "version": 5, "external_id": "op_d", "name": "Acme"}),
        json!({"status": "queued"}),
        json!({"note": "nothing we read"}),
    ];
    let classifiers: [fn(&CallResult) -> crate::Outcome; 3] =
        [classify_payment, classify_deal_create, classify_deal_update];
    for body in &bodies {
        let summary = answer_summary(body).unwrap_or(Value::Null);
        for status in [200, 201, 202, 400, 402, 409, 412, 500] {
            for classify in classifiers {
                assert_eq!(
                    classify(&answer(status, summary.clone())),
                    classify(&answer(status, body.clone())),
                    "{status} {body}"
                );
            }
        }
        assert_eq!(
            Found::from_object(&summary),
            Found::from_object(body),
            "{body}"
        );
    }
}
