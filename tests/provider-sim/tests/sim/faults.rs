//! Fault injection around the commit point, as seen by a client.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::{
    error_code, impatient_client, json_of, payment_body, start_default, start_with_fault,
    wait_until, API_KEY,
};

#[tokio::test]
async fn error_after_commit_is_saved_and_replayed_with_one_effect() {
    let sim = start_with_fault(
        json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 503}),
    )
    .await;
    let body = payment_body("op_5xx_after");

    let (status, error) = json_of(sim.create_payment("op_5xx_after", &body).await).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(error["error"]["type"], "api_error");

    let replay = sim.create_payment("op_5xx_after", &body).await;
    assert_eq!(replay.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(json_of(replay).await.1, error);

    assert_eq!(sim.effects("op_5xx_after").await["payments"], 1);
    let (_, found) = json_of(sim.get("/v1/payments?reference=op_5xx_after").await).await;
    assert_eq!(
        found["data"].as_array().unwrap().len(),
        1,
        "only a lookup can resolve it"
    );
}

#[tokio::test]
async fn error_before_commit_leaves_no_effect_and_nothing_under_the_key() {
    let sim = start_with_fault(
        json!({"route": "POST /v1/payments", "kind": "error_before_commit", "status": 500}),
    )
    .await;
    let body = payment_body("op_5xx_before");

    let (status, error) = json_of(sim.create_payment("op_5xx_before", &body).await).await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::INTERNAL_SERVER_ERROR, "simulated_fault")
    );
    assert_eq!(sim.effects("op_5xx_before").await["payments"], 0);

    let retry = sim.create_payment("op_5xx_before", &body).await;
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert!(retry.headers().get("idempotent-replayed").is_none());
    assert_eq!(sim.effects("op_5xx_before").await["payments"], 1);
}

#[tokio::test]
async fn drop_after_commit_closes_the_connection_but_the_key_holds_the_201() {
    let sim = start_default().await;
    // A first request opens a keep-alive connection, so the drop happens on a reused one.
    assert_eq!(
        sim.create_payment("op_warm", &payment_body("op_warm"))
            .await
            .status(),
        StatusCode::CREATED
    );
    sim.fault(json!({"route": "POST /v1/payments", "kind": "drop_after_commit"}))
        .await;
    let body = payment_body("op_drop_after");

    let dropped = sim.post("/v1/payments", "op_drop_after", &body).await;
    let error = dropped.expect_err("the client must see the connection close, not a response");
    assert!(!error.is_timeout(), "closed, not hung: {error}");
    assert_eq!(sim.effects("op_drop_after").await["payments"], 1);
    let log = sim.requests("op_drop_after").await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["status"], json!(null));

    let replay = sim.create_payment("op_drop_after", &body).await;
    assert_eq!(replay.status(), StatusCode::CREATED);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let (_, payment) = json_of(replay).await;
    assert_eq!(payment["reference"], "op_drop_after");
    assert_eq!(sim.effects("op_drop_after").await["payments"], 1);
}

#[tokio::test]
async fn drop_before_commit_has_no_effect_and_the_client_can_go_on() {
    let sim = start_with_fault(
        json!({"route": "POST /v1/payments", "kind": "drop_before_commit", "times": 2}),
    )
    .await;
    let body = payment_body("op_drop_before");

    for _ in 0..2 {
        assert!(sim
            .post("/v1/payments", "op_drop_before", &body)
            .await
            .is_err());
    }
    assert_eq!(sim.effects("op_drop_before").await["payments"], 0);

    let retry = sim.create_payment("op_drop_before", &body).await;
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert!(
        retry.headers().get("idempotent-replayed").is_none(),
        "nothing was saved under the key"
    );
    assert_eq!(sim.effects("op_drop_before").await["payments"], 1);
    let statuses: Vec<_> = sim
        .requests("op_drop_before")
        .await
        .iter()
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(null), json!(null), json!(201)]);
}

#[tokio::test]
async fn a_delayed_request_commits_even_when_the_client_gave_up() {
    let sim =
        start_with_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": 300}))
            .await;
    let impatient = impatient_client();

    let gave_up = impatient
        .post(sim.url("/v1/payments"))
        .bearer_auth(API_KEY)
        .header("Idempotency-Key", "op_gave_up")
        .json(&payment_body("op_gave_up"))
        .send()
        .await;
    assert!(gave_up
        .expect_err("the client times out first")
        .is_timeout());

    wait_until(
        "the delayed payment to commit",
        Duration::from_secs(5),
        || async { sim.effects("op_gave_up").await["payments"] == 1 },
    )
    .await;
    let replay = sim
        .create_payment("op_gave_up", &payment_body("op_gave_up"))
        .await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
}

#[tokio::test]
async fn a_pending_fault_creates_the_payment_as_pending() {
    let sim = start_with_fault(json!({"route": "POST /v1/payments", "kind": "pending"})).await;
    let (status, payment) = json_of(
        sim.create_payment("op_pending", &payment_body("op_pending"))
            .await,
    )
    .await;
    assert_eq!(
        (status, payment["status"].as_str()),
        (StatusCode::CREATED, Some("pending"))
    );
    let (_, next) = json_of(
        sim.create_payment("op_next", &payment_body("op_next"))
            .await,
    )
    .await;
    assert_eq!(next["status"], "succeeded", "the fault fired once");
}

#[tokio::test]
async fn faults_on_a_read_route_fail_that_read_only() {
    let sim = start_default().await;
    sim.create_payment("op_read_fault", &payment_body("op_read_fault"))
        .await;
    sim.fault(json!({"route": "GET /v1/payments", "kind": "error_before_commit", "status": 503}))
        .await;

    let failed = sim.get("/v1/payments?reference=op_read_fault").await;
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let (status, found) = json_of(sim.get("/v1/payments?reference=op_read_fault").await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(found["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn faults_are_listed_validated_and_cleared() {
    let sim = start_default().await;
    let bad = sim
        .admin_post(
            "/_sim/faults",
            &json!({"route": "POST /v1/payments", "kind": "explode"}),
        )
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let (_, error) = json_of(bad).await;
    assert_eq!(error_code(&error), "unknown_fault_kind");

    sim.fault(
        json!({"route": "POST /v1/refunds", "kind": "drop_before_commit", "probability": 0.5}),
    )
    .await;
    let listed = sim.admin_get("/_sim/faults").await;
    assert_eq!(listed["data"][0]["route"], "POST /v1/refunds");
    assert_eq!(listed["data"][0]["probability"], 0.5);

    let cleared = sim.without_key(Method::DELETE, "/_sim/faults").await;
    assert_eq!(json_of(cleared).await.1, json!({"cleared": 1}));
    assert_eq!(sim.admin_get("/_sim/faults").await, json!({"data": []}));
}
