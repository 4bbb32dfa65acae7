//! Refunds share the idempotency machinery and the read rules of payments.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{error_code, json_of, payment_body, start_default, Sim};

async fn paid(sim: &Sim) -> Value {
    json_of(
        sim.create_payment("op_paid", &payment_body("op_paid"))
            .await,
    )
    .await
    .1
}

fn refund_body(payment_id: &Value, reference: &str) -> Value {
    json!({"payment_id": payment_id, "amount_minor": 1_000, "currency": "KZT",
           "reason": "duplicate invoice", "reference": reference})
}

#[tokio::test]
async fn a_refund_is_created_replayed_found_and_fetched() {
    let sim = start_default().await;
    let payment = paid(&sim).await;
    let body = refund_body(&payment["id"], "op_refund");

    let (status, refund) =
        json_of(sim.post("/v1/refunds", "op_refund", &body).await.unwrap()).await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(refund["id"].as_str().unwrap().starts_with("re_"));
    assert_eq!(
        (refund["status"].as_str(), &refund["payment_id"]),
        (Some("succeeded"), &payment["id"])
    );

    let replay = sim.post("/v1/refunds", "op_refund", &body).await.unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(json_of(replay).await.1, refund);

    let (_, found) = json_of(sim.get("/v1/refunds?reference=op_refund").await).await;
    assert_eq!(found, json!({"data": [refund.clone()]}));
    let (_, fetched) = json_of(
        sim.get(&format!("/v1/refunds/{}", refund["id"].as_str().unwrap()))
            .await,
    )
    .await;
    assert_eq!(fetched, refund);
    assert_eq!(
        sim.effects("op_refund").await,
        json!({"reference": "op_refund", "payments": 0, "refunds": 1, "deals": 0, "orders": 0, "envelopes": 0})
    );
}

#[tokio::test]
async fn a_refund_of_an_unknown_payment_is_400_and_not_saved() {
    let sim = start_default().await;
    let body = refund_body(&json!("pay_missing"), "op_orphan");
    let (status, error) = json_of(sim.post("/v1/refunds", "op_orphan", &body).await.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (error["error"]["type"].as_str(), error_code(&error)),
        (Some("invalid_request"), "resource_missing")
    );

    let payment = paid(&sim).await;
    let fixed = sim
        .post(
            "/v1/refunds",
            "op_orphan",
            &refund_body(&payment["id"], "op_orphan"),
        )
        .await
        .unwrap();
    assert_eq!(
        fixed.status(),
        StatusCode::CREATED,
        "the 400 was not saved under the key"
    );
}

#[tokio::test]
async fn a_key_used_for_a_payment_cannot_be_reused_for_a_refund() {
    let sim = start_default().await;
    let payment = paid(&sim).await;
    let (status, error) = json_of(
        sim.post(
            "/v1/refunds",
            "op_paid",
            &refund_body(&payment["id"], "op_paid"),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::BAD_REQUEST, "idempotency_key_reused")
    );
}
