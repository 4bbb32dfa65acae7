//! The admin API: request log, effect totals, clock, reset, and shutdown.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{json_of, payment_body, start_default};

#[tokio::test]
async fn the_request_log_records_every_post_in_arrival_order() {
    let sim = start_default().await;
    let body = payment_body("op_log");
    sim.create_payment("op_log", &body).await;
    sim.create_payment("op_log", &body).await;
    sim.create_payment("op_other", &payment_body("op_other"))
        .await;

    let log = sim.requests("op_log").await;
    let expected = |replayed: bool| {
        json!({"method": "POST", "path": "/v1/payments", "idempotency_key": "op_log",
               "reference": "op_log", "status": 201, "replayed": replayed})
    };
    assert_eq!(log, [expected(false), expected(true)]);
    assert_eq!(
        sim.admin_get("/_sim/requests").await["data"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test]
async fn effect_totals_count_every_reference() {
    let sim = start_default().await;
    sim.create_payment("op_a", &payment_body("op_a")).await;
    sim.create_payment("op_b", &payment_body("op_b")).await;
    assert_eq!(
        sim.admin_get("/_sim/effects").await,
        json!({"payments": 2, "refunds": 0, "deals": 0, "orders": 0, "envelopes": 0})
    );
}

#[tokio::test]
async fn the_clock_moves_forward_on_request() {
    let sim = start_default().await;
    let before = sim.admin_get("/_sim/clock").await;
    assert_eq!(before["offset_seconds"], 0);
    let (status, after) = json_of(
        sim.admin_post("/_sim/clock/advance", &json!({"seconds": 3600}))
            .await,
    )
    .await;
    assert_eq!(
        (status, &after["offset_seconds"]),
        (StatusCode::OK, &json!(3600))
    );
    let negative = sim
        .admin_post("/_sim/clock/advance", &json!({"seconds": -5}))
        .await;
    assert_eq!(negative.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn reset_forgets_everything() {
    let sim = start_default().await;
    let body = payment_body("op_reset");
    sim.create_payment("op_reset", &body).await;
    sim.fault(json!({"route": "POST /v1/payments", "kind": "drop_before_commit"}))
        .await;
    sim.advance_clock(10).await;

    let reset = sim.admin_post("/_sim/reset", &json!({})).await;
    assert_eq!(reset.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        sim.admin_get("/_sim/effects").await,
        json!({"payments": 0, "refunds": 0, "deals": 0, "orders": 0, "envelopes": 0})
    );
    assert_eq!(sim.admin_get("/_sim/requests").await, json!({"data": []}));
    assert_eq!(sim.admin_get("/_sim/clock").await["offset_seconds"], 0);

    let again = sim.create_payment("op_reset", &body).await;
    assert_eq!(again.status(), StatusCode::CREATED, "the fault was cleared");
    assert!(
        again.headers().get("idempotent-replayed").is_none(),
        "the key was forgotten"
    );
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let sim = start_default().await;
    let url = sim.url("/_sim/effects");
    assert!(sim.http.get(&url).send().await.is_ok());
    sim.running.shutdown().await;
    let fresh = reqwest::Client::new();
    assert!(
        fresh.get(&url).send().await.is_err(),
        "nothing listens any more"
    );
}
