//! Ids made of dots only (`.`, `..`) are refused as identifiers, wherever ids are read:
//! they would be steps in a provider's URL path, not names (a deal update on `..` would
//! be `PATCH /v1/deals`). The queue dead-letters them as `invalid_field`, the API answers
//! 422 `invalid_field` naming the field, and nothing is stored.

use fleet_broker::Queue;
use fleet_core::Role;
use fleet_tests::{
    deal_update_intent, intent, intent_bytes, refund_intent, with_payload_member, TestFleet,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Intents naming an id made of dots only, with the field a refusal names.
fn dotted() -> Vec<(Value, &'static str)> {
    let mut tenant = intent();
    tenant["tenant_id"] = json!("..");
    vec![
        (
            deal_update_intent("..", 3, json!({"stage": "won"})),
            "target",
        ),
        (
            deal_update_intent(".", 3, json!({"stage": "won"})),
            "target",
        ),
        (
            with_payload_member(intent(), "invoice_id", ".."),
            "payload.invoice_id",
        ),
        (
            with_payload_member(intent(), "beneficiary_id", "..."),
            "payload.beneficiary_id",
        ),
        (refund_intent("..", 100), "payload.payment_id"),
        (tenant, "tenant_id"),
    ]
}

#[tokio::test]
async fn ids_made_of_dots_are_dead_lettered_as_invalid_fields() {
    let fleet = TestFleet::with_prepare().await;
    let cases = dotted();
    for (intent, _) in &cases {
        fleet.submit_bytes(&intent_bytes(intent)).await;
    }
    let dead = fleet
        .expect_dead_letters(Queue::IntentsPrepare, cases.len() as u32)
        .await;
    for (intent, field) in &cases {
        let bytes = intent_bytes(intent);
        let found = dead
            .iter()
            .find(|(body, _)| *body == bytes)
            .unwrap_or_else(|| panic!("no dead letter for {field}"));
        assert_eq!(found.1.as_deref(), Some("invalid_field"), "{field}");
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        0,
        "nothing is written for an id made of dots"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn ids_made_of_dots_are_422_invalid_field_naming_the_field() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let token = fleet.token("billing-bot", Role::Agent, &["org_482"]).await;
    for (intent, field) in dotted() {
        let response = api
            .submit_bytes(&fleet.http, &token, intent_bytes(&intent))
            .await;
        assert_eq!(
            response.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{field}"
        );
        let problem: Value = response.json().await.unwrap();
        assert_eq!(
            (&problem["code"], &problem["field"]),
            (&json!("invalid_field"), &json!(field)),
            "{problem}"
        );
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        0,
        "nothing is written for an id made of dots"
    );
    fleet.stop().await;
}
