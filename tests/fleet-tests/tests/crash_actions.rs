//! The crash windows of the catalogue's newer actions, with real processes: `fleet-execute`
//! is SIGKILLed (or its answer lost) inside each window, and reconcile plus a healthy
//! worker must end every operation with exactly one effect at the provider and no blind
//! retry. `order.status.change` is settled from the order itself (`GET /v1/orders/<id>`).

use fleet_tests::{
    contract, fast_reconcile, hash_of, op_of, order_change_intent, TestFleet,
};
use serde_json::{json, Value};

const SHORT_LEASE: (&str, &str) = ("LEASE_TTL_MS", "1500");

/// An action under test: how to set the provider up and what the effect looks like.
struct Case {
    intent: Value,
    /// The provider route of the one side-effecting request (for faults).
    route: &'static str,
    /// What the settled operation's external id is.
    external_id: String,
}

/// A fleet with prepare running and a `paid` order to move to `fulfilled`.
async fn order_case() -> (TestFleet, Case) {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let order = fleet.sim_order("paid").await;
    let intent = order_change_intent(&order, "paid", "fulfilled");
    (
        fleet,
        Case {
            intent,
            route: "POST /v1/orders/{id}/transitions",
            external_id: order,
        },
    )
}

async fn approve(fleet: &TestFleet, case: &Case) -> String {
    let op = op_of(&case.intent);
    fleet.submit(&case.intent).await;
    fleet.prepared(&op).await;
    fleet.approve(&op, &hash_of(&case.intent)).await.unwrap();
    op
}

/// The operation ended succeeded with exactly one effect and `posts` requests.
async fn settled_once(
    fleet: &TestFleet,
    case: &Case,
    op: &str,
    posts: usize,
) -> fleet_store::OperationRow {
    let row = fleet.reaches(op, "succeeded").await;
    assert_eq!(row.external_id.as_deref(), Some(case.external_id.as_str()));
    assert_eq!(fleet.sim_effects(op).await, 1, "exactly one effect");
    assert_eq!(fleet.sim_posts(op).await, posts, "requests sent");
    row
}

/// Kills a worker paused at `point` once it got there.
async fn killed_at(fleet: &TestFleet, point: &str) {
    let mut doomed =
        fleet.spawn_process("fleet-execute", &[SHORT_LEASE, ("FLEET_PAUSE_AT", point)]);
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    doomed.kill9();
}

async fn killed_before_the_call_is_proven_absent_and_sent_once(fleet: &mut TestFleet, case: Case) {
    let op = approve(fleet, &case).await;
    killed_at(fleet, "before_provider_call").await;
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.spawn_execute();
    let row = settled_once(fleet, &case, &op, 1).await;
    assert_eq!(row.fence, 2, "the second claim did the work");
    let events = fleet.store.events(&op).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("lookup_proved_absence")),
        "a lookup proved absence before the retry"
    );
}

async fn killed_after_the_answer_is_found_by_lookup_with_no_second_request(
    fleet: &mut TestFleet,
    case: Case,
) {
    let op = approve(fleet, &case).await;
    killed_at(fleet, "after_provider_response").await;
    assert_eq!(
        fleet.store.get(&op).await.unwrap().unwrap().status,
        "in_progress",
        "nothing was recorded"
    );
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.spawn_execute();
    let row = settled_once(fleet, &case, &op, 1).await;
    assert_eq!(row.fence, 1, "never claimed again");
}

async fn killed_after_the_record_the_redelivered_doorbell_changes_nothing(
    fleet: &mut TestFleet,
    case: Case,
) {
    let op = approve(fleet, &case).await;
    let mut doomed = fleet.spawn_process("fleet-execute", &[("FLEET_PAUSE_AT", "after_record")]);
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    assert_eq!(
        fleet.store.get(&op).await.unwrap().unwrap().status,
        "succeeded"
    );
    doomed.kill9();
    let survivor = fleet.spawn_process("fleet-execute", &[]);
    survivor.wait_for_log("consumer subscribed").await;
    fleet.drained(fleet_broker::Queue::OperationsExecute).await;
    let row = settled_once(fleet, &case, &op, 1).await;
    assert_eq!(row.fence, 1);
    drop(survivor);
}

async fn killed_while_the_provider_commits_is_found_by_lookup(fleet: &mut TestFleet, case: Case) {
    let op = approve(fleet, &case).await;
    // The provider holds the request 1 s, then commits it whatever happened to the caller.
    fleet
        .sim_fault(json!({"route": case.route, "kind": "delay", "delay_ms": 1000}))
        .await;
    let mut doomed = fleet.spawn_process("fleet-execute", &[SHORT_LEASE]);
    fleet.provider_received(&op).await;
    doomed.kill9();
    // The provider may commit up to 1 s after the request started: reconcile waits that long.
    let slow = fleet_core::reconcile::ProviderContract {
        max_request_ms: 2_000,
        ..contract(300)
    };
    fleet.spawn_reconcile(slow, fast_reconcile());
    fleet.spawn_execute();
    let row = settled_once(fleet, &case, &op, 1).await;
    assert_eq!(row.fence, 1, "never claimed again");
}

async fn an_answer_lost_after_the_commit_is_unknown_then_found_by_lookup(
    fleet: &mut TestFleet,
    case: Case,
) {
    fleet
        .sim_fault(json!({"route": case.route, "kind": "drop_after_commit"}))
        .await;
    fleet.spawn_execute();
    let op = approve(fleet, &case).await;
    let unknown = fleet.reaches(&op, "unknown").await;
    assert_eq!(unknown.status_reason.as_deref(), Some("connection_reset"));
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    settled_once(fleet, &case, &op, 1).await;
    fleet.recorded(&op, "lookup").await;
}

#[tokio::test]
async fn an_order_change_killed_before_the_call_is_proven_absent_and_sent_once() {
    let (mut fleet, case) = order_case().await;
    killed_before_the_call_is_proven_absent_and_sent_once(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_order_change_killed_after_the_answer_is_found_on_the_order_with_no_second_request() {
    let (mut fleet, case) = order_case().await;
    killed_after_the_answer_is_found_by_lookup_with_no_second_request(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_order_change_killed_after_the_record_is_not_sent_again() {
    let (mut fleet, case) = order_case().await;
    killed_after_the_record_the_redelivered_doorbell_changes_nothing(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_order_change_killed_while_the_provider_commits_is_found_on_the_order() {
    let (mut fleet, case) = order_case().await;
    killed_while_the_provider_commits_is_found_by_lookup(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_order_change_whose_answer_was_lost_after_the_commit_is_found_on_the_order() {
    let (mut fleet, case) = order_case().await;
    an_answer_lost_after_the_commit_is_unknown_then_found_by_lookup(&mut fleet, case).await;
    fleet.stop().await;
}
