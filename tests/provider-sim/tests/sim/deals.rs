//! The CRM API (docs/design.md#crm-api): non-unique external ids, search, versions with
//! `ETag` / `If-Match`, asynchronous creates, faults, and the admin helpers for deals.

use std::time::Duration;

use fleet_provider_sim::SimConfig;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};

use crate::common::{
    error_code, impatient_client, json_of, start, start_default, start_with_fault, wait_until, Sim,
    API_KEY,
};

fn deal_body(external_id: &str) -> Value {
    json!({
        "external_id": external_id,
        "name": "Acme renewal",
        "amount_minor": 5_000_000,
        "currency": "KZT",
        "stage": "proposal",
        "owner_id": "usr_42",
    })
}

async fn try_create(sim: &Sim, body: &Value) -> reqwest::Result<Response> {
    sim.http
        .post(sim.url("/v1/deals"))
        .bearer_auth(API_KEY)
        .json(body)
        .send()
        .await
}

async fn create(sim: &Sim, body: &Value) -> Response {
    try_create(sim, body).await.expect("POST /v1/deals")
}

/// Creates a deal synchronously and answers it.
async fn created(sim: &Sim, external_id: &str) -> Value {
    let (status, deal) = json_of(create(sim, &deal_body(external_id)).await).await;
    assert_eq!(status, StatusCode::CREATED, "{deal}");
    deal
}

async fn try_patch(
    sim: &Sim,
    id: &str,
    if_match: Option<&str>,
    body: &Value,
) -> reqwest::Result<Response> {
    let mut request = sim
        .http
        .patch(sim.url(&format!("/v1/deals/{id}")))
        .bearer_auth(API_KEY)
        .json(body);
    if let Some(version) = if_match {
        request = request.header("If-Match", version);
    }
    request.send().await
}

async fn patch(sim: &Sim, id: &str, if_match: Option<&str>, body: &Value) -> Response {
    try_patch(sim, id, if_match, body)
        .await
        .expect("PATCH /v1/deals/{id}")
}

async fn search(sim: &Sim, external_id: &str) -> Vec<Value> {
    let (status, found) = json_of(
        sim.get(&format!("/v1/deals?external_id={external_id}"))
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    found["data"].as_array().cloned().expect("data array")
}

async fn deals_of(sim: &Sim, external_id: &str) -> Value {
    sim.effects(external_id).await["deals"].clone()
}

fn id_of(deal: &Value) -> &str {
    deal["id"].as_str().expect("deal id")
}

fn etag(response: &Response) -> &str {
    response.headers()["etag"].to_str().expect("ASCII ETag")
}

#[tokio::test]
async fn a_repeated_create_makes_a_second_deal_with_the_same_external_id() {
    let sim = start_default().await;
    let response = create(&sim, &deal_body("op_twice")).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(etag(&response), "\"1\"");
    let (_, first) = json_of(response).await;
    let second = created(&sim, "op_twice").await;

    assert!(id_of(&first).starts_with("deal_"));
    assert_ne!(id_of(&first), id_of(&second));
    let mut expected = deal_body("op_twice");
    for deal in [&first, &second] {
        // Every field of the create comes back as it was sent.
        for (field, sent) in expected.as_object().unwrap() {
            assert_eq!(&deal[field], sent, "{field}");
        }
        assert_eq!(deal["version"], 1);
        assert!(deal["created_at"].is_string());
        assert_eq!(deal["updated_at"], deal["created_at"]);
    }
    expected["external_id"] = json!("op_other");
    create(&sim, &expected).await;

    assert_eq!(search(&sim, "op_twice").await, [first, second]);
    assert_eq!(deals_of(&sim, "op_twice").await, 2);
    assert_eq!(sim.requests("op_twice").await.len(), 2);
}

#[tokio::test]
async fn search_lags_while_get_by_id_is_strongly_consistent() {
    let sim = start(SimConfig {
        crm_search_lag_ms: 60_000,
        ..SimConfig::default()
    })
    .await;
    let deal = created(&sim, "op_lag").await;

    assert!(search(&sim, "op_lag").await.is_empty());
    let fetched = sim.get(&format!("/v1/deals/{}", id_of(&deal))).await;
    assert_eq!(etag(&fetched), "\"1\"");
    assert_eq!(json_of(fetched).await, (StatusCode::OK, deal.clone()));
    assert_eq!(deals_of(&sim, "op_lag").await, 1, "it exists, unsearchable");

    sim.advance_clock(60).await;
    assert_eq!(search(&sim, "op_lag").await, [deal]);
    assert!(search(&sim, "op_nothing").await.is_empty());

    let (status, error) = json_of(sim.get("/v1/deals").await).await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::BAD_REQUEST, "parameter_missing")
    );
}

#[tokio::test]
async fn if_match_updates_then_a_stale_version_gets_412_with_the_current_one() {
    let sim = start_default().await;
    let deal = created(&sim, "op_versions").await;
    let id = id_of(&deal);

    let updated = patch(&sim, id, Some("\"1\""), &json!({"stage": "won"})).await;
    assert_eq!(updated.status(), StatusCode::OK);
    assert_eq!(etag(&updated), "\"2\"");
    let (_, updated) = json_of(updated).await;
    assert_eq!(
        (&updated["version"], &updated["stage"]),
        (&json!(2), &json!("won"))
    );
    assert_eq!(
        updated["name"], deal["name"],
        "only the patched field moved"
    );

    let (status, conflict) =
        json_of(patch(&sim, id, Some("\"1\""), &json!({"stage": "lost"})).await).await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(
        conflict,
        json!({"error": {"type": "version_conflict", "current_version": 2}})
    );

    let fetched = sim.get(&format!("/v1/deals/{id}")).await;
    assert_eq!(etag(&fetched), "\"2\"");
    assert_eq!(
        json_of(fetched).await.1,
        updated,
        "the stale patch changed nothing"
    );

    let log = sim.requests(id).await;
    let entry = |status: u16| {
        json!({"method": "PATCH", "path": "/v1/deals/{id}", "idempotency_key": null,
               "reference": id, "status": status, "replayed": false})
    };
    assert_eq!(log, [entry(200), entry(412)]);
}

#[tokio::test]
async fn a_patch_without_if_match_applies_unconditionally() {
    let sim = start_default().await;
    let id = id_of(&created(&sim, "op_blind").await).to_owned();
    patch(&sim, &id, Some("\"1\""), &json!({"name": "Renamed"})).await;

    let blind = patch(
        &sim,
        &id,
        None,
        &json!({"amount_minor": 7_000_000, "currency": "USD"}),
    )
    .await;
    assert_eq!(blind.status(), StatusCode::OK);
    assert_eq!(etag(&blind), "\"3\"");
    let (_, deal) = json_of(blind).await;
    assert_eq!(
        (&deal["amount_minor"], &deal["currency"], &deal["name"]),
        (&json!(7_000_000), &json!("USD"), &json!("Renamed"))
    );

    let star = patch(&sim, &id, Some("*"), &json!({"owner_id": "usr_7"})).await;
    assert_eq!(star.status(), StatusCode::OK, "`*` matches any version");
    assert_eq!(etag(&star), "\"4\"");
}

#[tokio::test]
async fn invalid_writes_are_400_and_change_nothing() {
    let sim = start_default().await;
    let mut body = deal_body("op_invalid");
    body["priority"] = json!("high");
    let (status, error) = json_of(create(&sim, &body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error,
        json!({"error": {"type": "invalid_request", "code": "parameter_unknown",
                         "param": "priority"}})
    );
    let mut body = deal_body("op_invalid");
    body["amount_minor"] = json!(10.5);
    let (_, error) = json_of(create(&sim, &body).await).await;
    assert_eq!(error_code(&error), "parameter_invalid_integer");
    body.as_object_mut().unwrap().remove("amount_minor");
    let (_, error) = json_of(create(&sim, &body).await).await;
    assert_eq!(error_code(&error), "parameter_missing");
    assert_eq!(deals_of(&sim, "op_invalid").await, 0);
    let statuses: Vec<_> = sim
        .requests("op_invalid")
        .await
        .iter()
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(400), json!(400), json!(400)]);

    let deal = created(&sim, "op_patch_invalid").await;
    let id = id_of(&deal);
    for (if_match, body, code) in [
        (
            Some("\"1\""),
            json!({"external_id": "op_x"}),
            "parameter_unknown",
        ),
        (Some("\"1\""), json!({"version": 5}), "parameter_unknown"),
        (Some("\"1\""), json!({"stage": 3}), "parameter_invalid"),
        (Some("\"1\""), json!(["stage"]), "invalid_json"),
        (Some("1"), json!({"stage": "won"}), "if_match_invalid"),
    ] {
        let (status, error) = json_of(patch(&sim, id, if_match, &body).await).await;
        assert_eq!(
            (status, error_code(&error)),
            (StatusCode::BAD_REQUEST, code),
            "{body}"
        );
    }
    let (_, fetched) = json_of(sim.get(&format!("/v1/deals/{id}")).await).await;
    assert_eq!(fetched, deal);

    let (status, error) =
        json_of(patch(&sim, "deal_nope", None, &json!({"stage": "won"})).await).await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::NOT_FOUND, "resource_missing")
    );
    let (status, error) = json_of(sim.get("/v1/deals/deal_nope").await).await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::NOT_FOUND, "resource_missing")
    );
}

#[tokio::test]
async fn asynchronous_mode_queues_and_the_deal_materialises_once_later() {
    let sim = start(SimConfig {
        crm_async_create: true,
        crm_async_delay_ms: 60_000,
        ..SimConfig::default()
    })
    .await;
    let (status, body) = json_of(create(&sim, &deal_body("op_async")).await).await;
    assert_eq!(
        (status, body),
        (StatusCode::ACCEPTED, json!({"status": "queued"}))
    );
    assert_eq!(deals_of(&sim, "op_async").await, 0);
    assert!(search(&sim, "op_async").await.is_empty());
    assert_eq!(sim.admin_get("/_sim/effects").await["deals"], 0);

    sim.advance_clock(60).await;
    let found = search(&sim, "op_async").await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["version"], 1);
    assert_eq!(deals_of(&sim, "op_async").await, 1);
    assert_eq!(sim.admin_get("/_sim/effects").await["deals"], 1);
    let fetched = sim.get(&format!("/v1/deals/{}", id_of(&found[0]))).await;
    assert_eq!(fetched.status(), StatusCode::OK);

    sim.advance_clock(3_600).await;
    assert_eq!(deals_of(&sim, "op_async").await, 1, "counted once");
    let log = sim.requests("op_async").await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["status"], 202);
}

#[tokio::test]
async fn a_queued_fault_creates_the_deal_after_its_delay_and_fires_once() {
    let sim =
        start_with_fault(json!({"route": "POST /v1/deals", "kind": "queued", "delay_ms": 100}))
            .await;
    let (status, body) = json_of(create(&sim, &deal_body("op_queued")).await).await;
    assert_eq!(
        (status, body),
        (StatusCode::ACCEPTED, json!({"status": "queued"}))
    );

    wait_until(
        "the queued deal to materialise",
        Duration::from_secs(5),
        || async { search(&sim, "op_queued").await.len() == 1 },
    )
    .await;
    assert_eq!(deals_of(&sim, "op_queued").await, 1);

    let next = create(&sim, &deal_body("op_queued")).await;
    assert_eq!(next.status(), StatusCode::CREATED, "the fault fired once");
    assert_eq!(deals_of(&sim, "op_queued").await, 2);
}

#[tokio::test]
async fn a_queued_fault_without_delay_uses_the_configured_one() {
    let sim = start(SimConfig {
        crm_async_delay_ms: 30_000,
        ..SimConfig::default()
    })
    .await;
    sim.fault(json!({"route": "POST /v1/deals", "kind": "queued"}))
        .await;
    assert_eq!(
        create(&sim, &deal_body("op_cfg_delay")).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(deals_of(&sim, "op_cfg_delay").await, 0);
    sim.advance_clock(30).await;
    assert_eq!(deals_of(&sim, "op_cfg_delay").await, 1);
}

#[tokio::test]
async fn drop_after_commit_on_create_leaves_a_deal_the_client_never_heard_of() {
    let sim = start_default().await;
    // Warm a keep-alive connection, so the drop happens on a reused one.
    search(&sim, "op_warm").await;
    sim.fault(json!({"route": "POST /v1/deals", "kind": "drop_after_commit"}))
        .await;

    let dropped = try_create(&sim, &deal_body("op_drop_after")).await;
    let error = dropped.expect_err("the client must see the connection close");
    assert!(!error.is_timeout(), "closed, not hung: {error}");
    assert_eq!(deals_of(&sim, "op_drop_after").await, 1);
    assert_eq!(
        search(&sim, "op_drop_after").await.len(),
        1,
        "found by search"
    );
    let log = sim.requests("op_drop_after").await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["status"], json!(null));

    created(&sim, "op_drop_after").await;
    assert_eq!(
        deals_of(&sim, "op_drop_after").await,
        2,
        "no idempotency: a blind retry duplicates"
    );
}

#[tokio::test]
async fn before_commit_faults_on_create_leave_no_deal() {
    let sim =
        start_with_fault(json!({"route": "POST /v1/deals", "kind": "drop_before_commit"})).await;
    sim.fault(json!({"route": "POST /v1/deals", "kind": "error_before_commit", "status": 503}))
        .await;

    assert!(try_create(&sim, &deal_body("op_before")).await.is_err());
    let (status, error) = json_of(create(&sim, &deal_body("op_before")).await).await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::SERVICE_UNAVAILABLE, "simulated_fault")
    );
    assert_eq!(deals_of(&sim, "op_before").await, 0);
    created(&sim, "op_before").await;
    assert_eq!(deals_of(&sim, "op_before").await, 1);
}

#[tokio::test]
async fn error_after_commit_on_create_and_patch_hides_an_applied_write() {
    let sim = start_with_fault(
        json!({"route": "POST /v1/deals", "kind": "error_after_commit", "status": 500}),
    )
    .await;
    let (status, error) = json_of(create(&sim, &deal_body("op_5xx_after")).await).await;
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::INTERNAL_SERVER_ERROR, "simulated_fault")
    );
    let found = search(&sim, "op_5xx_after").await;
    assert_eq!(found.len(), 1);
    let id = id_of(&found[0]);

    sim.fault(
        json!({"route": "PATCH /v1/deals/{id}", "kind": "error_after_commit", "status": 503}),
    )
    .await;
    let failed = patch(&sim, id, Some("\"1\""), &json!({"stage": "won"})).await;
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let (_, fetched) = json_of(sim.get(&format!("/v1/deals/{id}")).await).await;
    assert_eq!(
        (&fetched["version"], &fetched["stage"]),
        (&json!(2), &json!("won")),
        "the patch was applied"
    );
    let (status, conflict) =
        json_of(patch(&sim, id, Some("\"1\""), &json!({"stage": "won"})).await).await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(conflict["error"]["current_version"], 2);
}

#[tokio::test]
async fn before_commit_and_drop_faults_on_patch() {
    let sim = start_default().await;
    let id = id_of(&created(&sim, "op_patch_faults").await).to_owned();
    sim.fault(
        json!({"route": "PATCH /v1/deals/{id}", "kind": "error_before_commit", "status": 500}),
    )
    .await;
    sim.fault(json!({"route": "PATCH /v1/deals/{id}", "kind": "drop_before_commit"}))
        .await;
    sim.fault(json!({"route": "PATCH /v1/deals/{id}", "kind": "drop_after_commit"}))
        .await;

    let failed = patch(&sim, &id, Some("\"1\""), &json!({"stage": "won"})).await;
    assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        try_patch(&sim, &id, Some("\"1\""), &json!({"stage": "won"}))
            .await
            .is_err()
    );
    let (_, unchanged) = json_of(sim.get(&format!("/v1/deals/{id}")).await).await;
    assert_eq!(unchanged["version"], 1, "nothing before the commit point");

    assert!(
        try_patch(&sim, &id, Some("\"1\""), &json!({"stage": "won"}))
            .await
            .is_err()
    );
    let (_, applied) = json_of(sim.get(&format!("/v1/deals/{id}")).await).await;
    assert_eq!(
        applied["version"], 2,
        "applied, then the connection dropped"
    );

    let statuses: Vec<_> = sim
        .requests(&id)
        .await
        .iter()
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(500), json!(null), json!(null)]);
}

#[tokio::test]
async fn faults_on_deal_reads_fail_or_slow_that_read_only() {
    let sim = start_default().await;
    let id = id_of(&created(&sim, "op_read_faults").await).to_owned();
    sim.fault(json!({"route": "GET /v1/deals", "kind": "error_before_commit", "status": 503}))
        .await;
    sim.fault(json!({"route": "GET /v1/deals/{id}", "kind": "drop_before_commit"}))
        .await;

    let failed = sim.get("/v1/deals?external_id=op_read_faults").await;
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(search(&sim, "op_read_faults").await.len(), 1);
    let dropped = sim
        .http
        .get(sim.url(&format!("/v1/deals/{id}")))
        .bearer_auth(API_KEY)
        .send()
        .await;
    assert!(dropped.is_err());

    sim.fault(json!({"route": "GET /v1/deals/{id}", "kind": "delay", "delay_ms": 300}))
        .await;
    let impatient = impatient_client();
    let gave_up = impatient
        .get(sim.url(&format!("/v1/deals/{id}")))
        .bearer_auth(API_KEY)
        .send()
        .await;
    assert!(gave_up
        .expect_err("the delay outlasts the client")
        .is_timeout());
    assert_eq!(
        sim.get(&format!("/v1/deals/{id}")).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn fault_kinds_that_make_no_sense_on_a_deal_route_are_refused() {
    let sim = start_default().await;
    for spec in [
        json!({"route": "POST /v1/deals", "kind": "pending"}),
        json!({"route": "PATCH /v1/deals/{id}", "kind": "queued"}),
        json!({"route": "POST /v1/payments", "kind": "queued"}),
        json!({"route": "GET /v1/deals", "kind": "drop_after_commit"}),
    ] {
        let refused = sim.admin_post("/_sim/faults", &spec).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{spec}");
        assert_eq!(
            error_code(&json_of(refused).await.1),
            "fault_not_applicable"
        );
    }
    let (status, rule) = json_of(
        sim.admin_post(
            "/_sim/faults",
            &json!({"route": "POST /v1/deals", "kind": "queued", "delay_ms": 250, "times": 2}),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        (
            &rule["route"],
            &rule["kind"],
            &rule["delay_ms"],
            &rule["times"]
        ),
        (
            &json!("POST /v1/deals"),
            &json!("queued"),
            &json!(250),
            &json!(2)
        )
    );
}

#[tokio::test]
async fn seeded_deals_and_another_users_edit_through_the_admin_api() {
    let sim = start_default().await;
    for _ in 0..2 {
        let seeded = sim.admin_post("/_sim/deals", &deal_body("op_seeded")).await;
        assert_eq!(seeded.status(), StatusCode::CREATED);
        assert_eq!(etag(&seeded), "\"1\"");
    }
    let found = search(&sim, "op_seeded").await;
    assert_eq!(
        found.len(),
        2,
        "the CRM holds two deals with this external id"
    );
    assert_eq!(deals_of(&sim, "op_seeded").await, 2);
    assert!(
        sim.requests("op_seeded").await.is_empty(),
        "seeding is not a request"
    );
    let id = id_of(&found[0]);

    let edit = sim
        .http
        .patch(sim.url(&format!("/_sim/deals/{id}")))
        .json(&json!({"stage": "negotiation"}))
        .send()
        .await
        .unwrap();
    assert_eq!(etag(&edit), "\"2\"");
    let (status, edited) = json_of(edit).await;
    assert_eq!(
        (status, &edited["stage"]),
        (StatusCode::OK, &json!("negotiation"))
    );

    let (status, conflict) =
        json_of(patch(&sim, id, Some("\"1\""), &json!({"stage": "won"})).await).await;
    assert_eq!(
        (status, conflict),
        (
            StatusCode::PRECONDITION_FAILED,
            json!({"error": {"type": "version_conflict", "current_version": 2}})
        )
    );
    assert_eq!(sim.admin_get(&format!("/_sim/deals/{id}")).await, edited);

    let missing = sim.without_key(Method::GET, "/_sim/deals/deal_nope").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let invalid = sim
        .admin_post("/_sim/deals", &json!({"external_id": "op_seeded"}))
        .await;
    assert_eq!(invalid.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn effects_and_the_request_log_include_deals_and_reset_forgets_them() {
    let sim = start_default().await;
    sim.create_payment("op_mixed", &crate::common::payment_body("op_mixed"))
        .await;
    let deal = created(&sim, "op_mixed").await;
    created(&sim, "op_deal_only").await;

    assert_eq!(
        sim.effects("op_mixed").await,
        json!({"reference": "op_mixed", "payments": 1, "refunds": 0, "deals": 1, "orders": 0, "envelopes": 0})
    );
    assert_eq!(
        sim.admin_get("/_sim/effects").await,
        json!({"payments": 1, "refunds": 0, "deals": 2, "orders": 0, "envelopes": 0})
    );
    let log = sim.requests("op_mixed").await;
    assert_eq!(log.len(), 2);
    assert_eq!(
        log[1],
        json!({"method": "POST", "path": "/v1/deals", "idempotency_key": null,
               "reference": "op_mixed", "status": 201, "replayed": false})
    );

    let reset = sim.admin_post("/_sim/reset", &json!({})).await;
    assert_eq!(reset.status(), StatusCode::NO_CONTENT);
    assert_eq!(sim.admin_get("/_sim/effects").await["deals"], 0);
    let gone = sim.get(&format!("/v1/deals/{}", id_of(&deal))).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn deal_routes_require_the_api_key() {
    let sim = start_default().await;
    let anonymous = sim
        .http
        .post(sim.url("/v1/deals"))
        .json(&deal_body("op_anonymous"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(deals_of(&sim, "op_anonymous").await, 0);
    assert!(sim.requests("op_anonymous").await.is_empty());
}
