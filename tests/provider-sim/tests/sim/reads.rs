//! Reads: eventually consistent search, strongly consistent get, and authentication.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::{json_of, payment_body, start, start_default};
use fleet_provider_sim::SimConfig;

#[tokio::test]
async fn search_lag_hides_a_fresh_payment_that_get_by_id_sees() {
    let sim = start(SimConfig {
        search_lag_ms: 60_000,
        ..SimConfig::default()
    })
    .await;
    let (_, payment) = json_of(sim.create_payment("op_lag", &payment_body("op_lag")).await).await;

    let (status, found) = json_of(sim.get("/v1/payments?reference=op_lag").await).await;
    assert_eq!((status, found), (StatusCode::OK, json!({"data": []})));
    let id = payment["id"].as_str().unwrap();
    let (status, fetched) = json_of(sim.get(&format!("/v1/payments/{id}")).await).await;
    assert_eq!((status, &fetched), (StatusCode::OK, &payment));

    sim.advance_clock(60).await;
    let (_, found) = json_of(sim.get("/v1/payments?reference=op_lag").await).await;
    assert_eq!(found, json!({"data": [payment]}));
}

#[tokio::test]
async fn an_unknown_payment_id_is_404() {
    let sim = start_default().await;
    let (status, error) = json_of(sim.get("/v1/payments/pay_nope").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        error,
        json!({"error": {"type": "invalid_request", "code": "resource_missing"}})
    );
}

#[tokio::test]
async fn every_v1_route_requires_the_api_key() {
    let sim = start_default().await;
    let unauthorized =
        json!({"error": {"type": "authentication_error", "code": "invalid_api_key"}});

    let missing = sim
        .without_key(Method::GET, "/v1/payments?reference=op_x")
        .await;
    assert_eq!(
        json_of(missing).await,
        (StatusCode::UNAUTHORIZED, unauthorized.clone())
    );

    let wrong = sim
        .http
        .post(sim.url("/v1/payments"))
        .bearer_auth("sk_test_wrong")
        .header("Idempotency-Key", "op_wrong_key")
        .json(&payment_body("op_wrong_key"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(wrong).await,
        (StatusCode::UNAUTHORIZED, unauthorized)
    );
    assert_eq!(sim.effects("op_wrong_key").await["payments"], 0);
}

#[tokio::test]
async fn the_default_status_can_be_pending() {
    let sim = start(SimConfig {
        default_payment_status: "pending".into(),
        ..SimConfig::default()
    })
    .await;
    let (_, payment) = json_of(sim.create_payment("op_p", &payment_body("op_p")).await).await;
    assert_eq!(payment["status"], "pending");
}

#[tokio::test]
async fn an_invalid_default_status_is_refused_at_spawn() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = SimConfig {
        default_payment_status: "failed".into(),
        ..SimConfig::default()
    };
    assert!(fleet_provider_sim::spawn(config, listener).await.is_err());
}
