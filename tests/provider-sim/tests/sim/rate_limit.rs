//! The rate limit: one second of requests per provider API, then 429 with `Retry-After: 1`,
//! refused before anything ran and logged for the tests that count refusals.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{json_of, payment_body, start};
use fleet_provider_sim::SimConfig;

#[tokio::test]
async fn above_the_rate_a_request_is_refused_with_retry_after_and_runs_nothing() {
    // One request a second (a bucket of one): the test's requests take well under it.
    let sim = start(SimConfig {
        rate_limit_per_s: Some(1),
        ..SimConfig::default()
    })
    .await;
    let response = sim
        .create_payment("op_rl_1", &payment_body("op_rl_1"))
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    // Reads and writes share the payments API's bucket.
    assert_eq!(
        sim.get("/v1/payments?reference=op_rl_1").await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );

    let refused = sim
        .create_payment("op_rl_3", &payment_body("op_rl_3"))
        .await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    let (_, body) = json_of(refused).await;
    assert_eq!(
        body,
        json!({"error": {"type": "rate_limit_error", "code": "rate_limited"}})
    );
    assert_eq!(sim.effects("op_rl_3").await["payments"], 0);
    let logged = sim.requests("op_rl_3").await;
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0]["status"], 429);
    assert_eq!(logged[0]["path"], "/v1/payments");

    // Another provider API has a bucket of its own.
    assert_ne!(
        sim.get("/v1/deals?external_id=op_rl_1").await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn the_limit_can_be_set_and_lifted_while_the_simulator_runs() {
    let sim = start(SimConfig::default()).await;
    assert_eq!(
        sim.admin_get("/_sim/rate_limit").await,
        json!({"per_second": null})
    );
    for _ in 0..5 {
        assert_eq!(
            sim.get("/v1/payments?reference=op_rl").await.status(),
            StatusCode::OK
        );
    }
    let (status, set) = json_of(
        sim.admin_post("/_sim/rate_limit", &json!({"per_second": 1}))
            .await,
    )
    .await;
    assert_eq!((status, set), (StatusCode::OK, json!({"per_second": 1})));
    assert_eq!(
        sim.get("/v1/payments?reference=op_rl").await.status(),
        StatusCode::OK
    );
    assert_eq!(
        sim.get("/v1/payments?reference=op_rl").await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    sim.admin_post("/_sim/rate_limit", &json!({"per_second": null}))
        .await;
    assert_eq!(
        sim.get("/v1/payments?reference=op_rl").await.status(),
        StatusCode::OK
    );
}
