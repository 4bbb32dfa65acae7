//! Dead letters at hand, through the real `fleet-prepare`, `fleet-relay` and `fleet-api`
//! processes: an intent prepare refuses is moved by the relay from the broker into
//! Postgres, listed with its reason, replayed through the same validation (refused again:
//! still listed, the new reason recorded) and discarded (gone from the list, every action
//! recorded, in a table the API's role cannot write). An intent dead-lettered because the
//! payee's directory stayed silent is stored by a replay once the directory is back, as
//! the principal its broker user speaks for. Only operators may look (an agent gets 403),
//! and only at their tenants'. A relay SIGKILLed after keeping a message and before
//! acking it loses nothing and keeps it once.

use fleet_broker::Queue;
use fleet_core::Role;
use fleet_tests::{eventually, intent, op_of, ApiProcess, TestFleet, TENANT};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The harness publishes intents as its broker user; `principal` speaks for it, so a
/// replay submits as that principal.
async fn speaks_for_the_harness(fleet: &TestFleet, principal: &str) {
    let user = fleet.broker.user().expect("the broker URL names a user");
    let n = fleet
        .sql()
        .await
        .execute(
            "UPDATE principals SET broker_user = $1 WHERE name = $2",
            &[&user, &principal],
        )
        .await
        .unwrap();
    assert_eq!(n, 1, "the principal exists");
}

/// The listing, once it holds `n` dead letters.
async fn listed(fleet: &TestFleet, api: &ApiProcess, token: &str, n: usize) -> Vec<Value> {
    eventually(&format!("{n} dead letters listed"), || async {
        let (status, page) = api.get(&fleet.http, token, "/v1/dead-letters").await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let data = page["data"].as_array().unwrap().clone();
        (data.len() == n).then_some(data)
    })
    .await
}

/// Replays the dead letter `id` as `token`: the status and the answer.
async fn replay_as(
    api: &ApiProcess,
    fleet: &TestFleet,
    token: &str,
    id: impl std::fmt::Display,
) -> (StatusCode, Value) {
    let path = format!("/v1/dead-letters/{id}/replay");
    post(api, fleet, token, &path, json!({})).await
}

async fn post(
    api: &ApiProcess,
    fleet: &TestFleet,
    token: &str,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let r = api.post(&fleet.http, token, path, &body).await;
    (r.status(), r.json().await.unwrap())
}

async fn kept_rows(fleet: &TestFleet) -> i64 {
    fleet
        .sql()
        .await
        .query_one("SELECT count(*) FROM dead_letters", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_refused_intent_is_kept_listed_refused_again_by_a_replay_and_discarded() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let _prepare = fleet.spawn_process("fleet-prepare", &[]);
    let _relay = fleet.spawn_process("fleet-relay", &[]);
    let ops = fleet.token("night-ops", Role::Operator, &[TENANT]).await;
    let other_ops = fleet.token("other-ops", Role::Operator, &["org_999"]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    speaks_for_the_harness(&fleet, "billing-bot").await;

    let mut bad = intent();
    bad["payload"]["amount_minor"] = json!("oops");
    fleet.submit(&bad).await;
    let data = listed(&fleet, &api, &ops, 1).await;
    let dead = &data[0];
    assert_eq!(dead["queue"], "intents.prepare", "{dead}");
    assert_eq!(dead["tenant_id"], TENANT, "{dead}");
    assert_eq!(dead["body"]["operation_id"], op_of(&bad), "{dead}");
    let reason = dead["reason"].as_str().expect("a reason").to_owned();
    assert_eq!(dead["first_reason"], reason.as_str());
    assert_eq!(dead["headers"]["x-fleet-reason"], reason.as_str(), "{dead}");
    let id = dead["id"].as_i64().unwrap();
    // Moved: nothing waits on the broker any more.
    assert_eq!(
        fleet_broker::dead_letter_count(&fleet.broker, Queue::IntentsPrepare)
            .await
            .unwrap(),
        0
    );
    // Filters.
    let (_, page) = api
        .get(
            &fleet.http,
            &ops,
            &format!("/v1/dead-letters?reason={reason}&queue=intents.prepare"),
        )
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    let (_, page) = api
        .get(
            &fleet.http,
            &ops,
            "/v1/dead-letters?queue=operations.execute",
        )
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 0, "{page}");

    // Only operators, and only of its tenant.
    let (status, problem) = api.get(&fleet.http, &agent, "/v1/dead-letters").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(problem["code"], "role_not_allowed");
    let (status, _) = replay_as(&api, &fleet, &agent, id).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, page) = api.get(&fleet.http, &other_ops, "/v1/dead-letters").await;
    assert_eq!(page["data"], json!([]), "{page}");
    let (status, _) = api
        .get(&fleet.http, &other_ops, &format!("/v1/dead-letters/{id}"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The same validation refuses it again: it stays, with the reason recorded.
    let (status, replay) = replay_as(&api, &fleet, &ops, id).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["outcome"], "refused", "{replay}");
    assert_eq!(replay["reason"], reason.as_str(), "{replay}");
    assert_eq!(replay["dead_letter"]["resolution"], Value::Null);
    listed(&fleet, &api, &ops, 1).await;

    // `fleetctl dead-letters` shows the same, over the API with the operator's token.
    let out = api
        .fleetctl_as(&ops, &[], &["dead-letters", "list", "-o", "json"])
        .await;
    assert!(out.status.success(), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["data"][0]["id"], id, "{printed}");
    assert_eq!(printed["data"][0]["reason"], reason.as_str(), "{printed}");
    let out = api
        .fleetctl_as(&ops, &[], &["dead-letters", "show", &id.to_string()])
        .await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains(&reason) && table.contains("replay"),
        "{table}"
    );

    // Discarded with a reason: gone from the list, readable by id, both actions recorded.
    let (status, problem) = post(
        &api,
        &fleet,
        &ops,
        &format!("/v1/dead-letters/{id}/discard"),
        json!({"reason": " "}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    let (status, discarded) = post(
        &api,
        &fleet,
        &ops,
        &format!("/v1/dead-letters/{id}/discard"),
        json!({"reason": "an agent's test message"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{discarded}");
    assert_eq!(discarded["resolution"], "discarded");
    assert_eq!(discarded["resolved_by"], "operator:night-ops");
    listed(&fleet, &api, &ops, 0).await;
    let (status, shown) = api
        .get(&fleet.http, &ops, &format!("/v1/dead-letters/{id}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let actions: Vec<(&str, &str, &str)> = shown["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap(),
                a["outcome"].as_str().unwrap(),
                a["actor"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![
            ("replay", "refused", "operator:night-ops"),
            ("discard", "discarded", "operator:night-ops")
        ]
    );
    let (status, problem) = replay_as(&api, &fleet, &ops, id).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem["code"], "dead_letter_resolved");

    // The routes are in the OpenAPI document, behind the bearer token.
    let doc = fleet.get_json(&api.url("/openapi.json")).await;
    for (path, method) in [
        ("/v1/dead-letters", "get"),
        ("/v1/dead-letters/{id}", "get"),
        ("/v1/dead-letters/{id}/replay", "post"),
        ("/v1/dead-letters/{id}/discard", "post"),
    ] {
        let operation = &doc["paths"][path][method];
        assert_eq!(
            operation["security"],
            json!([{"bearer": []}]),
            "{method} {path}"
        );
        assert!(operation["responses"]["403"].is_object(), "{method} {path}");
    }

    // The record is the database's own: the API's role may not write it.
    let sql = fleet.sql().await;
    for statement in [
        "INSERT INTO dead_letter_actions (dead_letter_id, action, actor, outcome) VALUES (1, 'discard', 'x', 'discarded')",
        "UPDATE dead_letters SET resolved_at = NULL, resolution = NULL",
        "DELETE FROM dead_letter_actions",
    ] {
        let tx = format!("BEGIN; SET LOCAL ROLE fleet_api; {statement}; COMMIT");
        let e = sql.batch_execute(&tx).await.expect_err(statement);
        assert_eq!(e.code(), Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE), "{statement}: {e}");
        sql.batch_execute("ROLLBACK").await.unwrap();
    }
    fleet.stop().await;
}

#[tokio::test]
async fn an_intent_dead_lettered_while_the_directory_was_down_is_stored_by_a_replay() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let _prepare =
        fleet.spawn_process("fleet-prepare", &[("PREPARE_PAYEE_LOOKUP_DEADLINE_S", "3")]);
    let _relay = fleet.spawn_process("fleet-relay", &[]);
    let ops = fleet.token("night-ops", Role::Operator, &[TENANT]).await;
    fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    speaks_for_the_harness(&fleet, "billing-bot").await;
    fleet
        .sim_fault(
            json!({"route": "GET /v1/beneficiaries/{id}", "kind": "error_before_commit",
                          "status": 503, "times": 100_000}),
        )
        .await;

    let i = intent();
    fleet.submit(&i).await;
    let data = listed(&fleet, &api, &ops, 1).await;
    assert_eq!(data[0]["reason"], "payee_directory_unreachable", "{data:?}");
    let id = data[0]["id"].as_i64().unwrap();

    // The directory is back.
    fleet.clear_sim_faults().await;
    let (status, replay) = replay_as(&api, &fleet, &ops, id).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["outcome"], "stored", "{replay}");
    assert_eq!(replay["operation"]["operation_id"], op_of(&i), "{replay}");
    assert_eq!(replay["dead_letter"]["resolution"], "replayed", "{replay}");
    listed(&fleet, &api, &ops, 0).await;
    // Submitted as the principal the broker user speaks for, never a name from the body.
    let by: Option<String> = fleet
        .sql()
        .await
        .query_one(
            "SELECT submitted_by FROM operations WHERE operation_id = $1",
            &[&op_of(&i)],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(by.as_deref(), Some("billing-bot"));
    fleet.stop().await;
}

#[tokio::test]
async fn a_relay_killed_between_keeping_and_acking_loses_nothing_and_keeps_it_once() {
    let fleet = TestFleet::start().await;
    let _prepare = fleet.spawn_process("fleet-prepare", &[("PREPARE_ANONYMOUS_INTENTS", "allow")]);
    let mut doomed = fleet.spawn_process("fleet-relay", &[("FLEET_PAUSE_AT", "after_keep")]);
    let mut bad = intent();
    bad["payload"]["amount_minor"] = json!("oops");
    fleet.submit(&bad).await;
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    assert_eq!(kept_rows(&fleet).await, 1);
    doomed.kill9();
    // Back on the broker (never acked), taken again by the next relay, stored once.
    let relay = fleet.spawn_process("fleet-relay", &[]);
    relay.wait_for_log("dead letter kept").await;
    eventually("the dead-letter queue emptied", || async {
        (fleet_broker::dead_letter_count(&fleet.broker, Queue::IntentsPrepare)
            .await
            .unwrap()
            == 0)
            .then_some(())
    })
    .await;
    assert_eq!(kept_rows(&fleet).await, 1);
    fleet.stop().await;
}
