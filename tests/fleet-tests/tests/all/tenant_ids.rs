//! Another tenant's operation id answers exactly as a free one, through the real API
//! process against Postgres: reading it, naming it in `supersedes`, and submitting an
//! intent under it (over the API and the queue), after which both tenants' operations with
//! the one id are approved, executed under different provider keys, settled by their own
//! webhooks and read each by its own tenant.

use fleet_broker::Queue;
use fleet_core::{OpRef, Role, Status};
use fleet_tests::{eventually, hash_of, intent, op_of, with_amount, ApiProcess, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";

fn of_tenant(mut i: Value, tenant: &str) -> Value {
    i["tenant_id"] = json!(tenant);
    i
}

fn fresh_id() -> String {
    format!("op_{}", ulid::Ulid::new())
}

/// Every request names itself alike, so that two answers compare whole (an answer
/// carries its request's id).
const REQUEST_ID: &str = "tenant-ids-test";

/// (status, body) of POST /v1/intents.
async fn post(fleet: &TestFleet, api: &ApiProcess, token: &str, i: &Value) -> (StatusCode, Value) {
    let response = fleet
        .http
        .post(api.url("/v1/intents"))
        .bearer_auth(token)
        .header("x-request-id", REQUEST_ID)
        .json(i)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

/// (status, body) of GET `path`.
async fn get(fleet: &TestFleet, api: &ApiProcess, token: &str, path: &str) -> (StatusCode, String) {
    let response = fleet
        .http
        .get(api.url(path))
        .bearer_auth(token)
        .header("x-request-id", REQUEST_ID)
        .send()
        .await
        .unwrap();
    (response.status(), response.text().await.unwrap())
}

/// A fleet with the API, an operation of `OTHER_TENANT` stored, and an agent of `TENANT`:
/// (fleet, api, the other tenant's operation id, the agent's token).
async fn with_a_foreign_operation() -> (TestFleet, ApiProcess, String, String) {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let other = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    let theirs = of_tenant(intent(), OTHER_TENANT);
    assert_eq!(
        post(&fleet, &api, &other, &theirs).await.0,
        StatusCode::ACCEPTED
    );
    let agent = fleet.token("agent-a", Role::Agent, &[TENANT]).await;
    (fleet, api, op_of(&theirs), agent)
}

#[tokio::test]
async fn reading_another_tenants_operation_answers_as_reading_a_free_id() {
    let (fleet, api, foreign, agent) = with_a_foreign_operation().await;
    for path in ["/v1/operations/{}", "/v1/operations/{}/events"] {
        let theirs = get(&fleet, &api, &agent, &path.replace("{}", &foreign)).await;
        let free = get(&fleet, &api, &agent, &path.replace("{}", &fresh_id())).await;
        assert_eq!(theirs, free, "{path}");
        assert_eq!(theirs.0, StatusCode::NOT_FOUND, "{path}");
    }
    fleet.stop().await;
}

#[tokio::test]
async fn superseding_another_tenants_operation_answers_as_superseding_a_free_id() {
    let (fleet, api, foreign, agent) = with_a_foreign_operation().await;
    let correcting = |old: &str| {
        let mut i = of_tenant(intent(), TENANT);
        i["supersedes"] = json!(old);
        i
    };
    let theirs = post(&fleet, &api, &agent, &correcting(&foreign)).await;
    let free = post(&fleet, &api, &agent, &correcting(&fresh_id())).await;
    assert_eq!(theirs, free);
    assert_eq!(
        (
            theirs.0,
            &theirs.1["error"]["code"],
            &theirs.1["error"]["field"]
        ),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!("supersedes_unknown_operation"),
            &json!("supersedes")
        )
    );
    // Not even a lock the other tenant holds on its operation (a claim, a decision) shows:
    // the answer does not wait for it.
    let mut holder = fleet.sql().await;
    let lock = holder.transaction().await.unwrap();
    lock.execute(
        "SELECT 1 FROM operations WHERE operation_id = $1 FOR UPDATE",
        &[&foreign],
    )
    .await
    .unwrap();
    let while_locked = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        post(&fleet, &api, &agent, &correcting(&foreign)),
    )
    .await
    .expect("answered without waiting for the other tenant's lock");
    assert_eq!(while_locked, free);
    lock.rollback().await.unwrap();
    // The other tenant's operation is untouched.
    assert_eq!(fleet.view_in_db(&foreign).await["status"], "not_started");
    fleet.stop().await;
}

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

/// The stored row of `op` in `tenant`, once it is there.
async fn stored(fleet: &TestFleet, tenant: &str, op: &str) -> fleet_store::OperationRow {
    let store = fleet.store.clone();
    let (tenant, op) = (tenant.to_owned(), op.to_owned());
    eventually(&format!("{op} of {tenant} to be stored"), || {
        let (store, tenant, op) = (store.clone(), tenant.clone(), op.clone());
        async move { store.get(OpRef::new(&tenant, &op)).await.unwrap() }
    })
    .await
}

#[tokio::test]
async fn submitting_an_id_another_tenant_used_stores_it_as_a_free_id_at_both_doors() {
    let (mut fleet, api, foreign, agent) = with_a_foreign_operation().await;
    fleet.spawn_prepare();
    // Over the API: the same answer as for a free id, and a row of the caller's own.
    let mine = |op: &str| {
        let mut i = with_amount(of_tenant(intent(), TENANT), json!(990_000));
        i["operation_id"] = json!(op);
        i
    };
    let theirs = post(&fleet, &api, &agent, &mine(&foreign)).await;
    let free = post(&fleet, &api, &agent, &mine(&fresh_id())).await;
    assert_eq!(theirs.0, StatusCode::ACCEPTED, "{}", theirs.1);
    assert_eq!((theirs.0, keys(&theirs.1)), (free.0, keys(&free.1)));
    assert_eq!(
        (&theirs.1["operation_id"], &theirs.1["tenant_id"]),
        (&json!(foreign), &json!(TENANT))
    );
    assert_eq!(theirs.1["payload"]["amount_minor"], 990_000);
    // Sent again, it is the caller's own redelivery: 200, nothing new.
    assert_eq!(
        post(&fleet, &api, &agent, &mine(&foreign)).await.0,
        StatusCode::OK
    );

    // Over the queue: an id the other tenant used is prepared like a free one, nothing
    // dead-lettered.
    let other = fleet.token("agent-b2", Role::Agent, &[OTHER_TENANT]).await;
    let queued_foreign = of_tenant(intent(), OTHER_TENANT);
    assert_eq!(
        post(&fleet, &api, &other, &queued_foreign).await.0,
        StatusCode::ACCEPTED
    );
    let reused = op_of(&queued_foreign);
    let free_id = fresh_id();
    fleet.submit(&mine(&reused)).await;
    fleet.submit(&mine(&free_id)).await;
    let by_queue = stored(&fleet, TENANT, &reused).await;
    stored(&fleet, TENANT, &free_id).await;
    fleet.drained(Queue::IntentsPrepare).await;
    assert!(fleet.dead_letters(Queue::IntentsPrepare).await.is_empty());
    assert_eq!(by_queue.payload["amount_minor"], 990_000);

    // Two operations of one id, each its tenant's, each with its own provider key; the
    // other tenant's is untouched.
    for op in [&foreign, &reused] {
        let a = fleet
            .store
            .get(OpRef::new(OTHER_TENANT, op))
            .await
            .unwrap()
            .unwrap();
        let b = fleet
            .store
            .get(OpRef::new(TENANT, op))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(a.payload["amount_minor"], 1_250_000);
        assert_eq!(b.payload["amount_minor"], 990_000);
        assert_ne!(a.idempotency_key, b.idempotency_key);
        assert_eq!(
            fleet
                .count(&format!(
                    "SELECT count(*) FROM operations WHERE operation_id = '{op}'"
                ))
                .await,
            2
        );
    }
    fleet.stop().await;
}

#[tokio::test]
async fn two_tenants_operations_with_one_id_run_apart_under_their_own_keys() {
    let mut fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let ingest = fleet.spawn_webhook_ingest().await;
    fleet.sim_webhooks(&ingest.url(), json!({})).await;
    // Both payments are taken `pending`: their webhooks settle them.
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "pending", "times": 2}))
        .await;
    let agent_a = fleet.token("agent-a", Role::Agent, &[TENANT]).await;
    let agent_b = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let bob = fleet.token("bob", Role::Approver, &[OTHER_TENANT]).await;
    let both = fleet
        .token("olga", Role::Operator, &[TENANT, OTHER_TENANT])
        .await;

    let a = with_amount(of_tenant(intent(), TENANT), json!(1_250_000));
    let op = op_of(&a);
    let mut b = with_amount(of_tenant(intent(), OTHER_TENANT), json!(990_000));
    b["operation_id"] = json!(op);
    for (token, i) in [(&agent_a, &a), (&agent_b, &b)] {
        let (status, view) = post(&fleet, &api, token, i).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{view}");
    }

    // A caller granted both tenants names the tenant; without it the id is ambiguous.
    let path = format!("/v1/operations/{op}");
    let (status, body) = get(&fleet, &api, &both, &path).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("operation_id_ambiguous"), "{body}");
    for (tenant, amount) in [(TENANT, 1_250_000), (OTHER_TENANT, 990_000)] {
        let (status, body) = get(&fleet, &api, &both, &format!("{path}?tenant={tenant}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let view: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (
                view["tenant_id"].as_str(),
                view["payload"]["amount_minor"].as_i64()
            ),
            (Some(tenant), Some(amount))
        );
    }

    // Each tenant's approver approves its own; each approval lands on its own operation.
    for (token, i) in [(&alice, &a), (&bob, &b)] {
        let response = api
            .post(
                &fleet.http,
                token,
                &format!("/v1/operations/{op}/approve"),
                &json!({"payload_hash": hash_of(i)}),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let view: Value = response.json().await.unwrap();
        assert_eq!(view["tenant_id"], i["tenant_id"]);
        assert_eq!(view["approval_status"], "approved");
    }

    // Both run, each under its own key and reference at the provider.
    let mut keys = Vec::new();
    let mut payments = Vec::new();
    for tenant in [TENANT, OTHER_TENANT] {
        let row = fleet.reaches_in(tenant, &op, Status::Accepted).await;
        assert!(row.idempotency_key.as_str().ends_with(&op));
        let at_provider = fleet
            .sim_get(&format!("/_sim/requests?reference={}", row.idempotency_key))
            .await;
        let sent = at_provider["data"].as_array().unwrap();
        assert_eq!(sent.len(), 1, "{at_provider}");
        assert_eq!(sent[0]["idempotency_key"], json!(row.idempotency_key));
        assert_eq!(fleet.sim_effects(row.idempotency_key.as_str()).await, 1);
        keys.push(row.idempotency_key.to_string());
        payments.push((tenant, row.external_id.clone().unwrap()));
    }
    assert_ne!(
        keys[0], keys[1],
        "two tenants never share a key at a provider"
    );
    // Nor an outcome event id: each operation's events are named by its own key.
    let mut event_keys: Vec<String> = fleet_tests::first_column(
        &fleet.sql().await,
        "SELECT DISTINCT event_key FROM operation_outbox WHERE operation_id = $1",
        &[&op],
    )
    .await;
    event_keys.sort();
    let mut expected_keys = keys.clone();
    expected_keys.sort();
    assert_eq!(event_keys, expected_keys);

    // Each payment's webhook settles its own operation, and nothing else.
    for (tenant, payment) in &payments {
        fleet.sim_settle(payment, "succeeded").await;
        fleet.reaches_in(tenant, &op, Status::Succeeded).await;
    }
    let sql = fleet.sql().await;
    let linked = sql
        .query(
            "SELECT tenant_id, object_id, outcome FROM webhook_events WHERE operation_id = $1 ORDER BY tenant_id",
            &[&op],
        )
        .await
        .unwrap();
    let mut expected: Vec<(String, String, String)> = payments
        .iter()
        .map(|(t, p)| ((*t).to_owned(), p.clone(), "applied".to_owned()))
        .collect();
    expected.sort();
    assert_eq!(
        linked
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect::<Vec<(String, String, String)>>(),
        expected
    );

    // Each tenant reads only its own operation under the id, with its own history.
    for (token, tenant, amount, approver) in [
        (&agent_a, TENANT, 1_250_000, "approver:alice"),
        (&agent_b, OTHER_TENANT, 990_000, "approver:bob"),
    ] {
        let (status, body) = get(&fleet, &api, token, &path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let view: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (
                view["tenant_id"].as_str(),
                view["payload"]["amount_minor"].as_i64(),
                view["status"].as_str()
            ),
            (Some(tenant), Some(amount), Some("succeeded"))
        );
        let (status, _) = get(
            &fleet,
            &api,
            token,
            &format!(
                "{path}?tenant={}",
                if tenant == TENANT {
                    OTHER_TENANT
                } else {
                    TENANT
                }
            ),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "the other tenant's is not found"
        );
        let history = fleet.store.events(OpRef::new(tenant, &op)).await.unwrap();
        let kinds: Vec<(&str, &str)> = history
            .iter()
            .map(|e| (e.kind.as_str(), e.actor.as_str()))
            .collect();
        assert_eq!(
            kinds.iter().filter(|k| k.0 == "prepared").count(),
            1,
            "{kinds:?}"
        );
        assert_eq!(
            kinds
                .iter()
                .filter(|k| k.0 == "approved")
                .collect::<Vec<_>>(),
            vec![&("approved", approver)]
        );
        let approvals: Vec<String> = sql
            .query(
                "SELECT principal FROM approvals WHERE operation_id = $1 AND tenant_id = $2",
                &[&op, &tenant],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(
            approvals,
            vec![approver.trim_start_matches("approver:").to_owned()]
        );
    }
    fleet.stop().await;
}
