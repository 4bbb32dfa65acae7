//! Stripe idempotency semantics of `POST /v1/payments`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{
    error_code, json_of, payment_body, start_default, start_with_fault, wait_until,
};

#[tokio::test]
async fn create_then_replay_returns_the_same_body_marked_as_replayed() {
    let sim = start_default().await;
    let body = payment_body("op_replay");

    let first = sim.create_payment("op_replay", &body).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers()["request-id"]
        .to_str()
        .unwrap()
        .starts_with("req_"));
    assert!(first.headers().get("idempotent-replayed").is_none());
    let (_, created) = json_of(first).await;
    assert!(created["id"].as_str().unwrap().starts_with("pay_"));
    assert_eq!(created["status"], "succeeded");
    assert_eq!(created["amount_minor"], 1_250_000);
    assert_eq!(created["reference"], "op_replay");
    assert!(created["created_at"].as_str().is_some());

    let second = sim.create_payment("op_replay", &body).await;
    assert_eq!(second.status(), StatusCode::CREATED);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    let (_, replayed) = json_of(second).await;
    assert_eq!(replayed, created);
    assert_eq!(
        sim.effects("op_replay").await,
        json!({"reference": "op_replay", "payments": 1, "refunds": 0, "deals": 0, "orders": 0, "envelopes": 0})
    );
}

#[tokio::test]
async fn member_order_does_not_change_the_parameters() {
    let sim = start_default().await;
    let (status, _) = json_of(
        sim.create_payment("op_order", &payment_body("op_order"))
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let reordered = r#"{"reference":"op_order","invoice_id":"inv_9182","beneficiary_id":"vendor_77",
                        "currency":"KZT","amount_minor":1250000}"#;
    let response = sim
        .http
        .post(sim.url("/v1/payments"))
        .bearer_auth(crate::common::API_KEY)
        .header("Idempotency-Key", "op_order")
        .header("Content-Type", "application/json")
        .body(reordered)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["idempotent-replayed"], "true");
}

#[tokio::test]
async fn same_key_with_a_different_amount_is_refused_and_not_saved() {
    let sim = start_default().await;
    let body = payment_body("op_drift");
    assert_eq!(
        sim.create_payment("op_drift", &body).await.status(),
        StatusCode::CREATED
    );

    let mut drifted = body.clone();
    drifted["amount_minor"] = json!(1_250_001);
    let (status, error) = json_of(sim.create_payment("op_drift", &drifted).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error,
        json!({"error": {"type": "idempotency_error", "code": "idempotency_key_reused"}})
    );

    // The original parameters still replay: the refusal was not saved over them.
    let original = sim.create_payment("op_drift", &body).await;
    assert_eq!(original.headers()["idempotent-replayed"], "true");
    assert_eq!(sim.effects("op_drift").await["payments"], 1);
}

#[tokio::test]
async fn a_second_request_while_the_first_is_in_flight_gets_409() {
    let sim =
        start_with_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": 1_000}))
            .await;
    let body = payment_body("op_in_flight");

    let first = {
        let (http, url, body) = (sim.http.clone(), sim.url("/v1/payments"), body.clone());
        tokio::spawn(async move {
            let request = http
                .post(url)
                .bearer_auth(crate::common::API_KEY)
                .header("Idempotency-Key", "op_in_flight");
            request.json(&body).send().await
        })
    };
    wait_until(
        "the first request to arrive",
        Duration::from_secs(5),
        || async { !sim.requests("op_in_flight").await.is_empty() },
    )
    .await;

    let (status, error) = json_of(sim.create_payment("op_in_flight", &body).await).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        error,
        json!({"error": {"type": "idempotency_error", "code": "idempotency_key_in_use"}})
    );

    let first = first
        .await
        .unwrap()
        .expect("first request answered after the delay");
    assert_eq!(first.status(), StatusCode::CREATED);
    // The 409 was not saved: the key now replays the 201.
    assert_eq!(
        sim.create_payment("op_in_flight", &body).await.headers()["idempotent-replayed"],
        "true"
    );
    assert_eq!(sim.effects("op_in_flight").await["payments"], 1);
}

#[tokio::test]
async fn a_key_older_than_the_retention_window_is_forgotten() {
    let sim = start_default().await;
    let body = payment_body("op_expired");
    let (_, first) = json_of(sim.create_payment("op_expired", &body).await).await;

    sim.advance_clock(86_400).await;
    let response = sim.create_payment("op_expired", &body).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert!(response.headers().get("idempotent-replayed").is_none());
    let (_, second) = json_of(response).await;
    assert_ne!(second["id"], first["id"]);
    assert_eq!(sim.effects("op_expired").await["payments"], 2);
    let (_, found) = json_of(sim.get("/v1/payments?reference=op_expired").await).await;
    assert_eq!(found["data"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_closed_beneficiary_is_rejected_with_a_saved_402_and_no_effect() {
    let sim = start_default().await;
    let mut body = payment_body("op_closed");
    body["beneficiary_id"] = json!("closed_vendor_9");

    let (status, error) = json_of(sim.create_payment("op_closed", &body).await).await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(
        error,
        json!({"error": {"type": "payment_rejected", "code": "account_closed"}})
    );

    let replay = sim.create_payment("op_closed", &body).await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let (status, replayed) = json_of(replay).await;
    assert_eq!((status, replayed), (StatusCode::PAYMENT_REQUIRED, error));
    assert_eq!(sim.effects("op_closed").await["payments"], 0);

    body["beneficiary_id"] = json!("invalid_vendor");
    let (status, error) = json_of(sim.create_payment("op_invalid_beneficiary", &body).await).await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(error_code(&error), "invalid_beneficiary");
}

#[tokio::test]
async fn validation_failures_are_400_and_not_saved_under_the_key() {
    let sim = start_default().await;
    let mut body = payment_body("op_invalid");
    body["amount_minor"] = json!(12.5);
    let (status, error) = json_of(sim.create_payment("op_invalid", &body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["error"]["type"], "invalid_request");
    assert_eq!(error_code(&error), "parameter_invalid_integer");

    // Nothing was saved, so the corrected request executes rather than conflicting.
    let corrected = sim
        .create_payment("op_invalid", &payment_body("op_invalid"))
        .await;
    assert_eq!(corrected.status(), StatusCode::CREATED);
    assert!(corrected.headers().get("idempotent-replayed").is_none());

    for (field, value, code) in [
        ("amount_minor", json!(0), "amount_too_small"),
        ("currency", json!("kzt"), "invalid_currency"),
        ("reference", json!(""), "parameter_invalid"),
        ("surprise", json!(1), "parameter_unknown"),
    ] {
        let mut bad = payment_body("op_bad");
        bad[field] = value;
        let (status, error) = json_of(sim.create_payment("op_bad", &bad).await).await;
        assert_eq!(
            (status, error_code(&error)),
            (StatusCode::BAD_REQUEST, code),
            "{field}"
        );
    }
}

#[tokio::test]
async fn a_post_without_an_idempotency_key_is_refused() {
    let sim = start_default().await;
    let response = sim
        .http
        .post(sim.url("/v1/payments"))
        .bearer_auth(crate::common::API_KEY)
        .json(&payment_body("op_no_key"))
        .send()
        .await
        .unwrap();
    let (status, error) = json_of(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error,
        json!({"error": {"type": "invalid_request", "code": "idempotency_key_required"}})
    );
    assert_eq!(sim.effects("op_no_key").await["payments"], 0);
}

#[tokio::test]
async fn a_body_over_64_kib_is_refused() {
    let sim = start_default().await;
    let mut body = payment_body("op_big");
    body["invoice_id"] = json!("x".repeat(70 * 1024));
    let (status, error) = json_of(sim.create_payment("op_big", &body).await).await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large")
    );
}
