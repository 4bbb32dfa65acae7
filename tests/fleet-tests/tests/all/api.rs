//! fleet-api as a real process against real Postgres (and, for the whole flow, RabbitMQ,
//! the execute worker and the provider simulator): authentication and tenant scoping,
//! submission answered synchronously, who may supersede an operation (its submitter; the
//! queue only what came through the queue), waiting on an operation, listing with a
//! cursor, and the OpenAPI document.

use fleet_tests::at;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fleet_broker::Queue;
use fleet_core::{ApprovalStatus, Role, Status};
use fleet_tests::{
    eventually, hash_of, intent, intent_bytes, op_of, with_amount, with_payload_member, ApiProcess,
    TestFleet, NON_LATIN_ID, SPOOFED_IDS,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";

async fn fleet_with_api() -> (TestFleet, ApiProcess) {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    (fleet, api)
}

async fn submit(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    api.submit_bytes(&fleet.http, token, body).await
}

async fn get(fleet: &TestFleet, api: &ApiProcess, token: &str, path: &str) -> reqwest::Response {
    api.get_response(&fleet.http, token, path).await
}

/// The body of the answer to `GET path`.
async fn get_json(fleet: &TestFleet, api: &ApiProcess, token: &str, path: &str) -> Value {
    get(fleet, api, token, path).await.json().await.unwrap()
}

/// The status and the problem's `code` and `field`.
async fn error_of(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    (
        status,
        json!({"code": body["code"], "field": body["field"]}),
    )
}

/// [`error_of`] the answer to submitting `body`.
async fn submit_refusal(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    error_of(submit(fleet, api, token, body).await).await
}

/// The status and the problem's `code` of an [`error_of`].
fn code_of((status, error): &(StatusCode, Value)) -> (StatusCode, Option<&str>) {
    (*status, error["code"].as_str())
}

/// `GET path?query` must be refused as an invalid query naming `field`.
async fn invalid_query(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    path: &str,
    (query, field): (&str, Value),
) {
    let (status, error) = error_of(get(fleet, api, token, &format!("{path}?{query}")).await).await;
    assert_eq!(
        (status, error),
        (
            StatusCode::BAD_REQUEST,
            json!({"code": "invalid_query", "field": field})
        ),
        "{query}"
    );
}

#[tokio::test]
async fn requests_without_a_valid_token_are_refused_with_401_and_a_revoked_token_stops_working() {
    let (fleet, api) = fleet_with_api().await;
    let i = intent();
    // No header, another scheme, garbage, and a well-formed token nobody issued.
    let unissued = format!("fleet_{}", "0".repeat(64));
    let attempts = [
        None,
        Some("Basic dXNlcjpwYXNz".to_owned()),
        Some("Bearer nonsense".to_owned()),
        Some(format!("Bearer {unissued}")),
    ];
    for auth in &attempts {
        for (method, path) in [
            ("POST", "/v1/intents"),
            ("GET", "/v1/operations"),
            ("GET", &*format!("/v1/operations/{}", op_of(&i))),
        ] {
            let mut request = fleet
                .http
                .request(method.parse().unwrap(), api.url(path))
                .body(intent_bytes(&i));
            if let Some(a) = auth {
                request = request.header("authorization", a);
            }
            let response = request.send().await.unwrap();
            assert_eq!(
                response
                    .headers()
                    .get("www-authenticate")
                    .map(|v| v.to_str().unwrap()),
                Some("Bearer"),
                "{method} {path} {auth:?}"
            );
            let (status, error) = error_of(response).await;
            assert_eq!(
                (status, error["code"].as_str()),
                (StatusCode::UNAUTHORIZED, Some("unauthorized")),
                "{method} {path} {auth:?}"
            );
        }
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        0,
        "nothing was written"
    );

    // A token made with the real command works until it is revoked by its prefix.
    let token = fleet.token_for("billing-bot", "agent", &[TENANT]).await;
    assert!(token.starts_with("fleet_") && token.len() == 70, "{token}");
    assert_eq!(
        get(&fleet, &api, &token, "/v1/operations").await.status(),
        StatusCode::OK
    );
    // Only its hash is stored.
    let stored: i64 = fleet
        .count(&format!(
            "SELECT count(*) FROM api_tokens WHERE to_jsonb(api_tokens)::text LIKE '%{}%'",
            &token[6..]
        ))
        .await;
    assert_eq!(stored, 0, "the token itself is not in the database");
    fleet.fleetctl(&["token", "revoke", &token[..14]]).await;
    let (status, error) = error_of(get(&fleet, &api, &token, "/v1/operations").await).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthorized"))
    );
    api.never_logged(&token);
    fleet.stop().await;
}

#[tokio::test]
async fn submitting_for_a_tenant_not_granted_is_403_and_writes_nothing() {
    let (fleet, api) = fleet_with_api().await;
    let agent = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    let approver = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let i = intent();
    let refusal = submit_refusal(&fleet, &api, &agent, intent_bytes(&i)).await;
    assert_eq!(
        code_of(&refusal),
        (StatusCode::FORBIDDEN, Some("tenant_not_granted"))
    );
    // An approver of the right tenant may not propose (only agents do).
    let refusal = submit_refusal(&fleet, &api, &approver, intent_bytes(&i)).await;
    assert_eq!(
        code_of(&refusal),
        (StatusCode::FORBIDDEN, Some("role_not_allowed"))
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);
    assert_eq!(
        fleet.count("SELECT count(*) FROM operation_events").await,
        0
    );
    fleet.stop().await;
}

/// `intent` as a correction of `old`.
fn superseding(old: &str) -> Value {
    let mut correction = with_amount(intent(), json!(1_300_000));
    correction["supersedes"] = json!(old);
    correction
}

async fn status_of(fleet: &TestFleet, op: &str) -> (Status, ApprovalStatus) {
    let row = fleet.row(op).await;
    (row.status, row.approval_status)
}

/// The operation was cancelled (superseded) before anyone decided on it.
async fn cancelled_undecided(fleet: &TestFleet, op: &str) {
    assert_eq!(
        status_of(fleet, op).await,
        (Status::Cancelled, ApprovalStatus::Pending),
        "{op}"
    );
}

/// A new intent submitted over the API as the bearer of `token` and stored: (intent,
/// operation id).
async fn stored_as(fleet: &TestFleet, api: &ApiProcess, token: &str) -> (Value, String) {
    let i = intent();
    api.submitted(&fleet.http, token, &i).await;
    let op = op_of(&i);
    (i, op)
}

/// An intent stored for `owner`, an agent of the tenant, and `agent-b` of another tenant:
/// (owner's token, agent-b's token, operation id).
async fn stored_with_a_stranger(
    fleet: &TestFleet,
    api: &ApiProcess,
    owner: &str,
) -> (String, String, String) {
    let owner = fleet.token(owner, Role::Agent, &[TENANT]).await;
    let stranger = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    let (_, op) = stored_as(fleet, api, &owner).await;
    (owner, stranger, op)
}

#[tokio::test]
async fn only_the_submitter_supersedes_its_operation_and_a_colleague_gets_403() {
    let (fleet, api) = fleet_with_api().await;
    let owner = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let colleague = fleet.token("payroll-bot", Role::Agent, &[TENANT]).await;
    let operator = fleet.token("dana", Role::Operator, &[TENANT]).await;
    let (_, op) = stored_as(&fleet, &api, &owner).await;

    // A colleague of the same tenant cannot cancel it by naming it.
    let theirs = superseding(&op);
    let (status, error) = submit_refusal(&fleet, &api, &colleague, intent_bytes(&theirs)).await;
    assert_eq!(
        (status, error),
        (
            StatusCode::FORBIDDEN,
            json!({"code": "supersedes_forbidden", "field": null})
        )
    );
    assert_eq!(
        status_of(&fleet, &op).await,
        (Status::NotStarted, ApprovalStatus::Pending),
        "the colleague's target stays pending"
    );
    assert!(fleet
        .store
        .get(at(&op_of(&theirs)))
        .await
        .unwrap()
        .is_none());
    // Operators do not submit intents at all, so none supersedes through this route.
    let refusal = submit_refusal(&fleet, &api, &operator, intent_bytes(&superseding(&op))).await;
    assert_eq!(
        code_of(&refusal),
        (StatusCode::FORBIDDEN, Some("role_not_allowed"))
    );
    fleet.still_pending(&op).await;

    // Its submitter may: the correction is stored and the old one cancelled.
    let mine = superseding(&op);
    let response = submit(&fleet, &api, &owner, intent_bytes(&mine)).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let view: Value = response.json().await.unwrap();
    assert_eq!(view["supersedes"], json!(op));
    cancelled_undecided(&fleet, &op).await;
    assert_eq!(fleet.reason_of(&op).await, Some("superseded"));
    fleet.stop().await;
}

#[tokio::test]
async fn superseding_another_tenants_operation_is_answered_exactly_like_an_unknown_one() {
    let (fleet, api) = fleet_with_api().await;
    let (_, stranger, op) = stored_with_a_stranger(&fleet, &api, "billing-bot").await;
    let foreign = |old: &str| {
        let mut correction = superseding(old);
        correction["tenant_id"] = json!(OTHER_TENANT);
        intent_bytes(&correction)
    };
    let theirs = submit_refusal(&fleet, &api, &stranger, foreign(&op)).await;
    let missing = op_of(&intent());
    let nothing = submit_refusal(&fleet, &api, &stranger, foreign(&missing)).await;
    assert_eq!(theirs, nothing, "the same answer");
    assert_eq!(
        theirs,
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"code": "supersedes_unknown_operation", "field": "supersedes"})
        )
    );
    fleet.still_pending(&op).await;
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn the_queue_supersedes_only_what_came_through_the_queue() {
    let (mut fleet, api) = fleet_with_api().await;
    fleet.spawn_prepare();
    let owner = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    // Submitted over the API: a queue intent naming it is dead-lettered, nothing changes.
    let over_api = intent();
    let op = op_of(&over_api);
    api.submitted(&fleet.http, &owner, &over_api).await;
    let from_queue = superseding(&op);
    fleet.submit(&from_queue).await;
    let dead = fleet.expect_dead_letters(Queue::IntentsPrepare, 1).await;
    assert_eq!(dead[0].1.as_deref(), Some("supersedes_forbidden"));
    fleet.still_pending(&op).await;
    assert!(fleet
        .store
        .get(at(&op_of(&from_queue)))
        .await
        .unwrap()
        .is_none());

    // Submitted through the queue: a principal cannot replace it over the API, the queue can.
    let queued = intent();
    let queued_op = fleet.submitted(&queued).await;
    let refusal =
        submit_refusal(&fleet, &api, &owner, intent_bytes(&superseding(&queued_op))).await;
    assert_eq!(
        code_of(&refusal),
        (StatusCode::FORBIDDEN, Some("supersedes_forbidden"))
    );
    let correction = superseding(&queued_op);
    fleet.submitted(&correction).await;
    cancelled_undecided(&fleet, &queued_op).await;
    fleet.stop().await;
}

#[tokio::test]
async fn another_tenants_operation_is_not_found_and_not_listed() {
    let (fleet, api) = fleet_with_api().await;
    let (owner, stranger, op) = stored_with_a_stranger(&fleet, &api, "agent-a").await;
    for path in [
        format!("/v1/operations/{op}"),
        format!("/v1/operations/{op}?wait_for=final&timeout_s=1"),
    ] {
        let (status, error) = error_of(get(&fleet, &api, &stranger, &path).await).await;
        assert_eq!(
            (status, error["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found")),
            "{path}"
        );
    }
    let listed: Value = get_json(&fleet, &api, &stranger, "/v1/operations").await;
    assert_eq!(listed["data"], json!([]));
    // The same answer as for an operation that does not exist.
    let (status, _) = error_of(
        get(
            &fleet,
            &api,
            &owner,
            &format!("/v1/operations/{}", op_of(&intent())),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        get(&fleet, &api, &owner, &format!("/v1/operations/{op}"))
            .await
            .status(),
        StatusCode::OK
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_new_intent_is_202_with_its_view_and_location_and_the_same_intent_again_is_200() {
    let (fleet, api) = fleet_with_api().await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let i = intent();
    let op = op_of(&i);
    let first = submit(&fleet, &api, &token, intent_bytes(&i)).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let location = format!("/v1/operations/{op}");
    assert_eq!(first.headers()["location"], location.as_str());
    let view: Value = first.json().await.unwrap();
    assert_eq!(
        view,
        fleet.view_in_db(&op).await,
        "the answer is operation_view's, unchanged"
    );
    assert_eq!(
        (view["status"].as_str(), view["approval_status"].as_str()),
        (Some("not_started"), Some("pending"))
    );
    assert_eq!(view["payload_hash"], json!(hash_of(&i)));
    assert_eq!(view["submitted_by"], json!("billing-bot"));

    let mut reworded = i.clone();
    reworded["rationale"] = json!("the same snapshot, said differently");
    let again = submit(&fleet, &api, &token, intent_bytes(&reworded)).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers()["location"], location.as_str());
    assert_eq!(again.json::<Value>().await.unwrap(), view);
    let read: Value = get_json(&fleet, &api, &token, &location).await;
    assert_eq!(read, view);
    assert_eq!(fleet.history_len(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn the_same_operation_id_with_other_content_is_409_and_the_stored_one_is_untouched() {
    let (fleet, api) = fleet_with_api().await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let (i, op) = stored_as(&fleet, &api, &token).await;
    let before = fleet.view_in_db(&op).await;
    let other_content = intent_bytes(&with_amount(i, json!(1_250_001)));
    let (status, error) = submit_refusal(&fleet, &api, &token, other_content).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        error,
        json!({"code": "operation_id_conflict", "field": "operation_id"})
    );
    assert_eq!(fleet.view_in_db(&op).await, before);
    fleet.stop().await;
}

#[tokio::test]
async fn an_id_that_would_show_as_another_is_422_invalid_field_naming_it() {
    let (fleet, api) = fleet_with_api().await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    for (member, field, value) in SPOOFED_IDS {
        let i = with_payload_member(intent(), member, value);
        let (status, error) = submit_refusal(&fleet, &api, &token, intent_bytes(&i)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{value:?}");
        assert_eq!(
            error,
            json!({"code": "invalid_field", "field": field}),
            "{value:?}"
        );
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        0,
        "nothing is written for a refused id"
    );
    fleet.directory_holds(NON_LATIN_ID).await;
    let greek = with_payload_member(intent(), "beneficiary_id", NON_LATIN_ID);
    assert_eq!(
        submit(&fleet, &api, &token, intent_bytes(&greek))
            .await
            .status(),
        StatusCode::ACCEPTED,
        "an id in one other script is accepted"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn an_invalid_intent_is_422_with_the_dead_letter_reason_and_field_and_writes_nothing() {
    let (fleet, api) = fleet_with_api().await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let mut unknown_action = intent();
    unknown_action["action"] = json!("payment.delete");
    let mut wrong_provider = intent();
    wrong_provider["provider"] = json!("crm");
    let mut bad_currency = intent();
    bad_currency["payload"]["currency"] = json!("kzt");
    let cases: Vec<(Vec<u8>, &str, Value)> = vec![
        (
            b"{\"schema\": \"intent.v1\", ".to_vec(),
            "malformed",
            Value::Null,
        ),
        (
            intent_bytes(&with_amount(intent(), json!(0))),
            "invalid_field",
            json!("payload.amount_minor"),
        ),
        (
            intent_bytes(&bad_currency),
            "invalid_field",
            json!("payload.currency"),
        ),
        (intent_bytes(&unknown_action), "unknown_action", Value::Null),
        (
            intent_bytes(&wrong_provider),
            "unsupported_provider",
            json!("provider"),
        ),
    ];
    for (body, code, field) in cases {
        let (status, error) = submit_refusal(&fleet, &api, &token, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{code}");
        assert_eq!(error, json!({"code": code, "field": field}));
    }
    // A float amount: refused as the queue refuses it, the field named.
    let float = intent_bytes(&with_amount(intent(), json!(12500.5)));
    let refusal = submit_refusal(&fleet, &api, &token, float).await;
    assert_eq!(
        code_of(&refusal),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_field"))
    );
    assert_eq!(refusal.1["field"], "payload.amount_minor", "{}", refusal.1);
    let mut huge = intent();
    huge["rationale"] = json!("x".repeat(100 * 1024));
    let refusal = submit_refusal(&fleet, &api, &token, intent_bytes(&huge)).await;
    assert_eq!(
        code_of(&refusal),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("oversized"))
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);
    fleet.stop().await;
}

/// Every column but the principal and the clock readings (the payee's lookup time
/// included), and the history.
async fn stored_rows(fleet: &TestFleet, op: &str) -> (Value, Value, Value) {
    let sql = fleet.sql().await;
    let row = sql
        .query_one(
            // Each submission without a traceparent starts a trace of its own.
            "SELECT to_jsonb(o) - 'submitted_by' - 'created_at' - 'updated_at' - 'approval_expires_at'
                    - 'trace_parent'
                    || jsonb_build_object('payee', o.payee - 'looked_up_at'),
                    to_jsonb(EXTRACT(EPOCH FROM approval_expires_at - created_at)::int)
             FROM operations o WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap();
    let events = sql
        .query_one(
            "SELECT jsonb_agg(jsonb_build_array(kind, from_status, to_status, fence, actor, reason, evidence) ORDER BY id)
             FROM operation_events WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), events.get(0))
}

#[tokio::test]
async fn the_api_and_the_queue_write_identical_rows_but_for_the_submitter() {
    let i = intent();
    let op = op_of(&i);
    let mut queued = TestFleet::start().await;
    queued.spawn_prepare();
    queued.submit(&i).await;
    queued.prepared(&op).await;
    let (http, api) = fleet_with_api().await;
    let token = http.token("billing-bot", Role::Agent, &[TENANT]).await;
    api.submitted(&http.http, &token, &i).await;

    let (via_queue, via_api) = (
        stored_rows(&queued, &op).await,
        stored_rows(&http, &op).await,
    );
    assert_eq!(via_queue, via_api);
    assert_eq!(
        via_api.1,
        json!(3600),
        "the approval window is the intent's"
    );
    assert_eq!(queued.view_in_db(&op).await["submitted_by"], Value::Null);
    assert_eq!(
        http.view_in_db(&op).await["submitted_by"],
        json!("billing-bot")
    );
    queued.stop().await;
    http.stop().await;
}

#[tokio::test]
async fn a_long_poll_returns_the_decision_then_succeeded_after_fleetctl_approve() {
    let (fleet, api) = fleet_with_api().await;
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let (i, op) = stored_as(&fleet, &api, &token).await;

    let wait = |wait_for: &str| {
        let request = fleet
            .http
            .get(api.url(&format!(
                "/v1/operations/{op}?wait_for={wait_for}&timeout_s=60"
            )))
            .bearer_auth(&token);
        tokio::spawn(async move {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            response.json::<Value>().await.unwrap()
        })
    };
    let (decision, done) = (wait("decision"), wait("final"));
    // Both hold (they registered as waiters) before anyone approves.
    let http = fleet.http.clone();
    eventually("two waiting requests", || async {
        (api.gauge(&http, "fleet_api_waiting_requests").await? == 2.0).then_some(())
    })
    .await;
    assert!(!decision.is_finished() && !done.is_finished());

    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let approved = fleet
        .fleetctl_with(
            &[("FLEET_API_URL", &api.base_url), ("FLEET_TOKEN", &alice)],
            &["approve", &op, "--hash", &hash_of(&i)],
        )
        .await;
    assert!(
        String::from_utf8_lossy(&approved.stdout).contains("approved"),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    let decision = decision.await.unwrap();
    assert_eq!(decision["approval_status"], json!("approved"));
    assert_eq!(decision["decided_by"], json!("alice"));
    let done = done.await.unwrap();
    assert_eq!(done["status"], json!("succeeded"), "{done}");
    assert!(done["external_id"]
        .as_str()
        .is_some_and(|id| id.starts_with("pay_")));
    assert_eq!(done, fleet.view_in_db(&op).await);
    assert_eq!(fleet.sim_effects(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_wait_that_times_out_answers_200_with_the_current_view_and_bad_waits_are_400() {
    let (fleet, api) = fleet_with_api().await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let i = intent();
    let op = op_of(&i);
    submit(&fleet, &api, &token, intent_bytes(&i)).await;
    let started = Instant::now();
    let response = get(
        &fleet,
        &api,
        &token,
        &format!("/v1/operations/{op}?wait_for=decision&timeout_s=1"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(started.elapsed() >= Duration::from_secs(1), "it waited");
    assert_eq!(
        response.json::<Value>().await.unwrap()["approval_status"],
        json!("pending")
    );
    for query in [
        ("wait_for=final&timeout_s=61", json!("timeout_s")),
        ("wait_for=soon", json!("wait_for")),
        ("timeout_s=five", json!("timeout_s")),
        ("wait=final", json!("wait")),
    ] {
        let path = format!("/v1/operations/{op}");
        invalid_query(&fleet, &api, &token, &path, query).await;
    }
    // A timeout without a wait is taken (the document cannot say that one parameter needs
    // another) and waits for nothing.
    let started = Instant::now();
    let response = get(
        &fleet,
        &api,
        &token,
        &format!("/v1/operations/{op}?timeout_s=60"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it did not wait"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn waiting_requests_are_bounded_and_sigterm_answers_them_at_once() {
    let fleet = TestFleet::start().await;
    let mut api = fleet.spawn_api(&[("API_MAX_WAITERS", "1")]).await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let i = intent();
    let op = op_of(&i);
    submit(&fleet, &api, &token, intent_bytes(&i)).await;
    let path = format!("/v1/operations/{op}?wait_for=final&timeout_s=60");
    let holder = tokio::spawn(fleet.http.get(api.url(&path)).bearer_auth(&token).send());
    let http = fleet.http.clone();
    eventually("one waiting request", || async {
        (api.gauge(&http, "fleet_api_waiting_requests").await? == 1.0).then_some(())
    })
    .await;
    let refused = get(&fleet, &api, &token, &path).await;
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap()),
        Some("1")
    );
    let (status, error) = error_of(refused).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("too_many_waiters"))
    );

    // A draining process answers its waiter with the current view instead of holding it.
    let stopping = Instant::now();
    api.process.terminate();
    let answer = tokio::time::timeout(Duration::from_secs(10), holder)
        .await
        .expect("answered while draining")
        .unwrap()
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        answer.json::<Value>().await.unwrap()["status"],
        json!("not_started")
    );
    let process = std::sync::Mutex::new(&mut api.process);
    let exit = eventually("fleet-api to exit", || async {
        process.lock().unwrap().exited()
    })
    .await;
    assert!(exit.success(), "{exit}");
    assert!(stopping.elapsed() < Duration::from_secs(10));
    fleet.stop().await;
}

#[tokio::test]
async fn the_listing_pages_with_a_cursor_over_the_callers_tenants_only() {
    let (fleet, api) = fleet_with_api().await;
    let mine = fleet
        .token("agent-a", Role::Agent, &[TENANT, "org_483"])
        .await;
    let theirs = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    let mut expected = Vec::new();
    for n in 0..5 {
        let mut i = intent();
        i["tenant_id"] = json!(if n % 2 == 0 { TENANT } else { "org_483" });
        api.submitted(&fleet.http, &mine, &i).await;
        expected.push(op_of(&i));
    }
    for _ in 0..2 {
        let mut i = intent();
        i["tenant_id"] = json!(OTHER_TENANT);
        api.submitted(&fleet.http, &theirs, &i).await;
    }
    expected.reverse(); // newest first

    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let mut path = "/v1/operations?limit=2".to_owned();
    loop {
        let page: Value = get_json(&fleet, &api, &mine, &path).await;
        let data = page["data"].as_array().unwrap();
        pages.push(data.len());
        for view in data {
            assert_eq!(
                view,
                &fleet
                    .view_in_db(view["operation_id"].as_str().unwrap())
                    .await
            );
            seen.push(view["operation_id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/v1/operations?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(pages, vec![2, 2, 1]);
    assert_eq!(
        seen, expected,
        "every operation of the caller's tenants once, newest first"
    );

    // Filters: approve one, then list only the approved ones.
    let op = &expected[1];
    let hash = fleet.view_in_db(op).await["payload_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    fleet.approve(op, &hash).await.unwrap();
    let approved: Value = get_json(
        &fleet,
        &api,
        &mine,
        "/v1/operations?approval_status=approved",
    )
    .await;
    let ids: Vec<&str> = approved["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["operation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![op.as_str()]);
    let pending: Value = get_json(
        &fleet,
        &api,
        &mine,
        "/v1/operations?approval_status=pending&status=not_started&limit=100",
    )
    .await;
    assert_eq!(pending["data"].as_array().unwrap().len(), 4);

    for query in [
        ("limit=101", json!("limit")),
        ("limit=0", json!("limit")),
        ("cursor=bm9wZQ", json!("cursor")),
        // The document states a cursor is never empty; the first page has none.
        ("cursor=", json!("cursor")),
        ("status=done", json!("status")),
        ("sort=asc", json!("sort")),
    ] {
        invalid_query(&fleet, &api, &mine, "/v1/operations", query).await;
    }
    fleet.stop().await;
}

#[tokio::test]
async fn a_cursor_made_for_one_tenants_listing_is_refused_for_another_tenant() {
    let (fleet, api) = fleet_with_api().await;
    let mine = fleet
        .token("agent-a", Role::Agent, &[TENANT, "org_483"])
        .await;
    let theirs = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    for (token, tenant) in [(&mine, TENANT), (&mine, TENANT), (&theirs, OTHER_TENANT)] {
        for _ in 0..2 {
            let mut i = intent();
            i["tenant_id"] = json!(tenant);
            api.submitted(&fleet.http, token, &i).await;
        }
    }
    let cursor_of = |page: &Value| page["next_cursor"].as_str().unwrap().to_owned();
    let first = get_json(&fleet, &api, &mine, "/v1/operations?limit=1").await;
    let cursor = cursor_of(&first);
    let narrowed = get_json(
        &fleet,
        &api,
        &mine,
        &format!("/v1/operations?limit=1&tenant={TENANT}"),
    )
    .await;
    let narrowed_cursor = cursor_of(&narrowed);

    // Where it was made for, the cursor reads on.
    let next = get(
        &fleet,
        &api,
        &mine,
        &format!("/v1/operations?limit=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(next.status(), StatusCode::OK);
    let next = get(
        &fleet,
        &api,
        &mine,
        &format!("/v1/operations?limit=1&tenant={TENANT}&cursor={narrowed_cursor}"),
    )
    .await;
    assert_eq!(next.status(), StatusCode::OK);

    let refused = json!({"code": "cursor_invalid", "field": "cursor"});
    // Another caller of another tenant, the same caller narrowed to one tenant, and
    // narrowed to another: each is a listing of other tenants.
    for (token, path) in [
        (&theirs, format!("/v1/operations?limit=1&cursor={cursor}")),
        (
            &theirs,
            format!("/v1/operations?limit=1&cursor={narrowed_cursor}"),
        ),
        (
            &mine,
            format!("/v1/operations?limit=1&tenant={TENANT}&cursor={cursor}"),
        ),
        (
            &mine,
            format!("/v1/operations?limit=1&tenant=org_483&cursor={narrowed_cursor}"),
        ),
        (
            &mine,
            format!("/v1/operations?limit=1&cursor={narrowed_cursor}"),
        ),
    ] {
        let answer = error_of(get(&fleet, &api, token, &path).await).await;
        assert_eq!(answer, (StatusCode::BAD_REQUEST, refused.clone()), "{path}");
    }
    fleet.stop().await;
}

#[tokio::test]
async fn the_openapi_document_lists_every_route_and_the_view_it_describes_is_the_real_one() {
    let (fleet, api) = fleet_with_api().await;
    let doc = fleet.get_json(&api.url("/openapi.json")).await;
    assert_eq!(doc["openapi"], json!("3.1.0"));
    for (path, method) in [
        ("/v1/intents", "post"),
        ("/v1/operations/{id}", "get"),
        ("/v1/operations", "get"),
        ("/v1/operations/{id}/approve", "post"),
        ("/v1/operations/{id}/reject", "post"),
        ("/v1/operations/{id}/resolve", "post"),
        ("/v1/operations/{id}/dispute", "post"),
    ] {
        let operation = &doc["paths"][path][method];
        assert!(
            operation.is_object(),
            "{method} {path} is missing from {}",
            doc["paths"]
        );
        assert_eq!(
            operation["security"],
            json!([{"bearer": []}]),
            "{method} {path}"
        );
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        json!("bearer")
    );
    let waits: BTreeSet<&str> = doc["paths"]["/v1/operations/{id}"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        waits,
        BTreeSet::from(["id", "wait_for", "timeout_s", "tenant"])
    );
    // Every decision route takes the tenant too (ids are unique per tenant).
    for decision in ["approve", "reject", "resolve", "dispute"] {
        let path = format!("/v1/operations/{{id}}/{decision}");
        let names: BTreeSet<&str> = doc["paths"][path.as_str()]["post"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, BTreeSet::from(["id", "tenant"]), "{path}");
    }

    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let view: Value = submit(&fleet, &api, &token, intent_bytes(&intent()))
        .await
        .json()
        .await
        .unwrap();
    let documented: BTreeSet<&String> = doc["components"]["schemas"]["OperationView"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    let real: BTreeSet<&String> = view.as_object().unwrap().keys().collect();
    assert_eq!(
        documented, real,
        "the documented view and operation_view's keys differ"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn the_intent_schema_is_served_byte_for_byte_as_the_file_without_a_token_and_documented() {
    let (fleet, api) = fleet_with_api().await;
    let file = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/schemas/intent.v1.json"),
    )
    .unwrap();
    let response = fleet
        .http
        .get(api.url("/v1/schemas/intent.v1.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "application/schema+json"
    );
    let served = response.bytes().await.unwrap();
    assert!(
        served[..] == file[..],
        "the served schema differs from shared/schemas/intent.v1.json"
    );
    let schema: Value = serde_json::from_slice(&served).unwrap();
    assert_eq!(schema["title"], json!("intent.v1"));

    let doc = fleet.get_json(&api.url("/openapi.json")).await;
    let operation = &doc["paths"]["/v1/schemas/intent.v1.json"]["get"];
    assert!(
        operation["responses"]["200"]["content"]["application/schema+json"].is_object(),
        "the schema route is missing from the OpenAPI document: {}",
        doc["paths"]
    );
    fleet.stop().await;
}
