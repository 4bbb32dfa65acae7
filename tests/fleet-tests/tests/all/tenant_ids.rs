//! Another tenant's operation id answers exactly as a free one, through the real API
//! process against Postgres: reading it, and naming it in `supersedes`.

use fleet_core::Role;
use fleet_tests::{intent, op_of, ApiProcess, TestFleet};
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

/// (status, body) of POST /v1/intents.
async fn post(fleet: &TestFleet, api: &ApiProcess, token: &str, i: &Value) -> (StatusCode, Value) {
    let response = api.post(&fleet.http, token, "/v1/intents", i).await;
    (response.status(), response.json().await.unwrap())
}

/// (status, body) of GET `path`.
async fn get(fleet: &TestFleet, api: &ApiProcess, token: &str, path: &str) -> (StatusCode, String) {
    let response = fleet
        .http
        .get(api.url(path))
        .bearer_auth(token)
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
