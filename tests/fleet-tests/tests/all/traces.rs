//! Traces that join up, through the real processes: an agent's W3C `traceparent`, given at
//! the HTTP door or as the intake queue's message header, is stored with the operation,
//! reaches the provider on the payment request (the simulator records what it is sent),
//! rides on the outcome events as their CloudEvents `traceparent` attribute, and is on the
//! workers' log lines about the operation with its id. A malformed one is ignored (a new
//! trace is started), never refused.

use fleet_broker::Queue;
use fleet_core::trace_context::TraceParent;
use fleet_core::{Role, Status};
use fleet_tests::{
    eventually, fast_relay, hash_of, intent, intent_bytes, op_of, ApiProcess, TestFleet,
};
use serde_json::Value;

/// The agent's trace: its id, and the span the agent sent the intent from.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN: &str = "00f067aa0ba902b7";

fn agents_traceparent(trace_id: &str) -> String {
    format!("00-{trace_id}-{AGENT_SPAN}-01")
}

/// The trace id of a `traceparent` value, which must be well formed.
fn trace_id_of(traceparent: &str) -> String {
    TraceParent::parse(traceparent)
        .unwrap_or_else(|| panic!("not a well-formed traceparent: {traceparent:?}"))
        .trace_id_hex()
}

/// `POST /v1/intents` of `intent` as the bearer of `token`, with `headers` besides.
async fn submit_with(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    intent: &Value,
    headers: &[(&str, String)],
) -> reqwest::Response {
    let request = headers.iter().fold(
        fleet
            .http
            .post(api.url("/v1/intents"))
            .bearer_auth(token)
            .header("content-type", "application/json"),
        |request, (name, value)| request.header(*name, value.as_str()),
    );
    request.body(intent_bytes(intent)).send().await.unwrap()
}

/// The stored operation's `traceparent`.
async fn stored_trace(fleet: &TestFleet, op: &str) -> String {
    fleet
        .prepared(op)
        .await
        .trace_parent
        .expect("intake stores a traceparent with every operation")
}

/// The `traceparent` headers of the provider requests made for `op`, once there is one.
async fn provider_traces(fleet: &TestFleet, op: &str) -> Vec<String> {
    let reference = fleet.reference_of(op).await;
    let url = format!("{}/_sim/traces", fleet.sim.base_url);
    eventually(
        &format!("a provider request for {op} with a traceparent"),
        || async {
            let seen: Value = fleet.http.get(&url).send().await.ok()?.json().await.ok()?;
            let traces: Vec<String> = seen["data"]
                .as_array()?
                .iter()
                .filter(|t| t["idempotency_key"] == reference.as_str())
                .filter_map(|t| t["traceparent"].as_str().map(str::to_owned))
                .collect();
            (!traces.is_empty()).then_some(traces)
        },
    )
    .await
}

/// The JSON log lines of a process whose current span carries `operation_id` = `op`.
fn lines_about(log: &str, op: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["span"]["operation_id"] == op)
        .collect()
}

/// Asserts that `process`'s log has lines about `op` and that every one carries the trace id
/// `trace_id` (and, when `request_id` is wanted, a request id).
fn every_line_about_carries(log: &str, what: &str, op: &str, trace_id: &str, request_id: bool) {
    let lines = lines_about(log, op);
    assert!(
        !lines.is_empty(),
        "{what} logged nothing about {op}:\n{log}"
    );
    for line in &lines {
        assert_eq!(line["span"]["trace_id"], trace_id, "{what}: {line}");
        assert_eq!(
            line["span"]["span_id"].as_str().map(str::len),
            Some(16),
            "{what}: {line}"
        );
        if request_id {
            assert!(
                line["span"]["request_id"]
                    .as_str()
                    .is_some_and(|r| !r.is_empty()),
                "{what}: {line}"
            );
        }
    }
}

#[tokio::test]
async fn an_intent_sent_over_http_with_a_traceparent_is_paid_and_announced_in_the_agents_trace() {
    let mut fleet = TestFleet::start().await;
    let tap = fleet.tap_events("#").await;
    fleet.spawn_relay(fast_relay()).await;
    let api = fleet.spawn_api(&[]).await;
    let execute = fleet.spawn_process("fleet-execute", &[]);
    let token = fleet.token("trace-bot", Role::Agent, &["org_482"]).await;
    let i = intent();
    let op = op_of(&i);
    let headers = [
        ("traceparent", agents_traceparent(TRACE_ID)),
        ("tracestate", "congo=t61rcWkgMzE".to_owned()),
    ];
    let answer = submit_with(&fleet, &api, &token, &i, &headers).await;
    assert_eq!(answer.status(), 202, "{}", answer.text().await.unwrap());

    // Stored under the agent's trace, with the API's own span.
    let stored = stored_trace(&fleet, &op).await;
    assert_eq!(trace_id_of(&stored), TRACE_ID);
    assert!(!stored.contains(AGENT_SPAN), "a new span per hop: {stored}");

    fleet.approve(&op, &hash_of(&i)).await.expect("approved");
    fleet.reaches(&op, Status::Succeeded).await;

    // The payment request joined the trace, from a span of execute's own.
    for traceparent in provider_traces(&fleet, &op).await {
        assert_eq!(trace_id_of(&traceparent), TRACE_ID, "{traceparent}");
        assert_ne!(
            traceparent, stored,
            "execute's request has a span of its own"
        );
    }

    // Every outcome event carries the trace as its CloudEvents attribute.
    let events = tap
        .until_types(&op, &["prepared", "approved", "executing", "succeeded"])
        .await;
    for e in &events {
        let attribute = e.body["traceparent"].as_str().unwrap_or_else(|| {
            panic!("event without traceparent: {}", e.body);
        });
        assert_eq!(trace_id_of(attribute), TRACE_ID, "{}", e.body);
    }

    // The log lines about the operation carry its id and the trace id (and, at the API,
    // the request id), refusals or not.
    every_line_about_carries(&api.process.log_text(), "fleet-api", &op, TRACE_ID, true);
    eventually("execute to log about the payment", || async {
        (!lines_about(&execute.log_text(), &op).is_empty()).then_some(())
    })
    .await;
    every_line_about_carries(&execute.log_text(), "fleet-execute", &op, TRACE_ID, false);
    fleet.stop().await;
}

#[tokio::test]
async fn an_intent_sent_to_the_queue_with_a_traceparent_header_is_stored_and_paid_in_that_trace() {
    const QUEUE_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    let fleet = TestFleet::start().await;
    let prepare = fleet.spawn_process("fleet-prepare", &[]);
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let i = intent();
    let op = op_of(&i);
    fleet
        .publisher
        .publish_traced(
            Queue::IntentsPrepare,
            &intent_bytes(&i),
            Some(&agents_traceparent(QUEUE_TRACE)),
        )
        .await
        .expect("publish the intent");
    let stored = stored_trace(&fleet, &op).await;
    assert_eq!(trace_id_of(&stored), QUEUE_TRACE);
    assert!(!stored.contains(AGENT_SPAN), "a new span per hop: {stored}");
    prepare.wait_for_log("prepared, approval pending").await;
    every_line_about_carries(
        &prepare.log_text(),
        "fleet-prepare",
        &op,
        QUEUE_TRACE,
        false,
    );

    fleet.approve(&op, &hash_of(&i)).await.expect("approved");
    fleet.reaches(&op, Status::Succeeded).await;
    for traceparent in provider_traces(&fleet, &op).await {
        assert_eq!(trace_id_of(&traceparent), QUEUE_TRACE, "{traceparent}");
    }
    fleet.stop().await;
}

#[tokio::test]
async fn a_malformed_traceparent_is_ignored_at_every_door_and_a_new_trace_started() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let _prepare = fleet.spawn_process("fleet-prepare", &[]);
    let token = fleet.token("trace-bot", Role::Agent, &["org_482"]).await;
    let malformed = [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01".to_owned(),
        format!("00-{}-{AGENT_SPAN}-01", TRACE_ID.to_uppercase()),
        format!("01-{TRACE_ID}-{AGENT_SPAN}-01"),
        "garbage".to_owned(),
    ];
    let mut traces = Vec::new();
    for (n, bad) in malformed.iter().enumerate() {
        // Over HTTP: accepted as if no trace had been given.
        let i = intent();
        let op = op_of(&i);
        let headers = [("traceparent", bad.clone())];
        let answer = submit_with(&fleet, &api, &token, &i, &headers).await;
        assert_eq!(
            answer.status(),
            202,
            "{bad}: {}",
            answer.text().await.unwrap()
        );
        traces.push(trace_id_of(&stored_trace(&fleet, &op).await));
        // Over the queue: prepared, not dead-lettered.
        let i = intent();
        let op = op_of(&i);
        fleet
            .publisher
            .publish_traced(Queue::IntentsPrepare, &intent_bytes(&i), Some(bad))
            .await
            .expect("publish the intent");
        traces.push(trace_id_of(&stored_trace(&fleet, &op).await));
        assert_eq!(traces.len(), 2 * (n + 1));
    }
    for trace in &traces {
        assert_ne!(trace, TRACE_ID, "a malformed context is not continued");
    }
    let distinct: std::collections::BTreeSet<&String> = traces.iter().collect();
    assert_eq!(
        distinct.len(),
        traces.len(),
        "each intake starts a trace of its own"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn the_database_stores_only_a_well_formed_traceparent_whoever_writes_it() {
    let fleet = TestFleet::with_prepare().await;
    let op = fleet.submitted(&intent()).await;
    let stored = stored_trace(&fleet, &op).await;
    // The owner's connection: no grant stands between it and the column, only the rule.
    let sql = fleet.sql().await;
    let malformed = [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01".to_owned(),
        format!("00-{TRACE_ID}-0000000000000000-01"),
        format!("00-{}-{AGENT_SPAN}-01", TRACE_ID.to_uppercase()),
        format!("01-{TRACE_ID}-{AGENT_SPAN}-01"),
        "garbage".to_owned(),
    ];
    for bad in &malformed {
        let refused = sql
            .execute(
                "UPDATE operations SET trace_parent = $2 WHERE operation_id = $1",
                &[&op, bad],
            )
            .await
            .expect_err(bad);
        let db = refused.as_db_error().expect("refused by the database");
        assert_eq!(db.code().code(), "23514", "{bad}: {db}");
        assert_eq!(
            db.constraint(),
            Some("operations_trace_parent_w3c"),
            "{bad}"
        );
    }
    assert_eq!(
        stored_trace(&fleet, &op).await,
        stored,
        "nothing was changed"
    );
    // A well-formed value passes, and an update that does not name the column moves the
    // row as before.
    let other = agents_traceparent(TRACE_ID);
    sql.execute(
        "UPDATE operations SET trace_parent = $2 WHERE operation_id = $1",
        &[&op, &other],
    )
    .await
    .unwrap();
    sql.execute(
        "UPDATE operations SET updated_at = now() WHERE operation_id = $1",
        &[&op],
    )
    .await
    .unwrap();
    assert_eq!(stored_trace(&fleet, &op).await, other);
    fleet.stop().await;
}
