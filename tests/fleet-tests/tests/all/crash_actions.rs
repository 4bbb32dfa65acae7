//! The crash windows of the catalogue's newer actions, with real processes: `fleet-execute`
//! is SIGKILLed (or its answer lost) inside each window, and reconcile plus a healthy
//! worker must end every operation with exactly one effect at the provider and no blind
//! retry. `order.status.change` is settled from the order itself (`GET /v1/orders/<id>`);
//! `contract.send` by the envelope found by id or `external_ref` (no webhook here: an
//! accepted contract is looked up past its one-second deadline).

use fleet_core::reconcile::ProviderContract;
use fleet_core::Status;
use fleet_execute::ExecuteSettings;
use fleet_reconcile::ReconcileSettings;
use fleet_tests::at;
use fleet_tests::{contract, contract_intent, fast_reconcile, order_change_intent, TestFleet};
use serde_json::{json, Value};

const SHORT_LEASE: (&str, &str) = ("LEASE_TTL_MS", "1500");

/// An action under test: how to set the provider up and what the effect looks like.
struct Case {
    intent: Value,
    /// The provider route of the one side-effecting request (for faults).
    route: &'static str,
    /// What the settled operation's external id is, when known in advance; else its prefix.
    external_id: Result<String, &'static str>,
}

/// A fleet with prepare running and a `paid` order to move to `fulfilled`.
async fn order_case() -> (TestFleet, Case) {
    let fleet = TestFleet::with_prepare().await;
    let order = fleet.sim_order("paid").await;
    let intent = order_change_intent(&order, "paid", "fulfilled");
    (
        fleet,
        Case {
            intent,
            route: "POST /v1/orders/{id}/transitions",
            external_id: Ok(order),
        },
    )
}

/// A fleet with prepare running and a contract to send.
async fn contract_case() -> (TestFleet, Case) {
    let fleet = TestFleet::with_prepare().await;
    let intent = contract_intent("cust_1042");
    (
        fleet,
        Case {
            intent,
            route: "POST /v1/envelopes",
            external_id: Err("env_"),
        },
    )
}

/// An accepted operation (a contract the provider sends later) is looked up a second
/// after it was accepted, here and in the processes.
const QUICK_DEADLINE: (&str, &str) = ("ACCEPTED_DEADLINE_S", "1");

fn spawn_execute(fleet: &mut TestFleet) {
    fleet.spawn_execute_with(ExecuteSettings {
        accepted_deadline_s: 1,
        ..ExecuteSettings::default()
    });
}

fn spawn_reconcile(fleet: &mut TestFleet, contract: ProviderContract) {
    fleet.spawn_reconcile(
        contract,
        ReconcileSettings {
            accepted_deadline_s: 1,
            ..fast_reconcile()
        },
    );
}

/// The operation ended succeeded with exactly one effect and `posts` requests.
async fn settled_once(
    fleet: &TestFleet,
    case: &Case,
    op: &str,
    posts: usize,
) -> fleet_store::OperationRow {
    let row = fleet.reaches(op, Status::Succeeded).await;
    let external_id = row.external_id.clone().unwrap_or_default();
    match &case.external_id {
        Ok(expected) => assert_eq!(&external_id, expected),
        Err(prefix) => assert!(external_id.starts_with(prefix), "{external_id}"),
    }
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
    let op = fleet.submit_and_approve(&case.intent).await;
    // After the attempt's send mark, right before the request is handed to the network:
    // it may have left, so only a lookup proves it did not.
    killed_at(fleet, "after_send_mark").await;
    spawn_reconcile(fleet, contract(300));
    spawn_execute(fleet);
    let row = settled_once(fleet, &case, &op, 1).await;
    assert_eq!(row.fence, 2, "the second claim did the work");
    let events = fleet.store.events(at(&op)).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.reason.map(fleet_core::Reason::as_str) == Some("lookup_proved_absence")),
        "a lookup proved absence before the retry"
    );
}

async fn killed_after_the_answer_is_found_by_lookup_with_no_second_request(
    fleet: &mut TestFleet,
    case: Case,
) {
    let op = fleet.submit_and_approve(&case.intent).await;
    killed_at(fleet, "after_provider_response").await;
    assert_eq!(
        fleet.row(&op).await.status,
        Status::InProgress,
        "nothing was recorded"
    );
    spawn_reconcile(fleet, contract(300));
    spawn_execute(fleet);
    let row = settled_once(fleet, &case, &op, 1).await;
    assert_eq!(row.fence, 1, "never claimed again");
}

async fn killed_after_the_record_the_redelivered_doorbell_changes_nothing(
    fleet: &mut TestFleet,
    case: Case,
) {
    let op = fleet.submit_and_approve(&case.intent).await;
    let mut doomed = fleet.spawn_process(
        "fleet-execute",
        &[QUICK_DEADLINE, ("FLEET_PAUSE_AT", "after_record")],
    );
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    // Recorded: succeeded, or accepted for a contract the provider sends later.
    let recorded = fleet.row(&op).await.status;
    assert!(
        [Status::Succeeded, Status::Accepted].contains(&recorded),
        "{recorded}"
    );
    doomed.kill9();
    let survivor = fleet.spawn_process("fleet-execute", &[QUICK_DEADLINE]);
    spawn_reconcile(fleet, contract(300));
    survivor.wait_for_log("consumer subscribed").await;
    fleet.drained(fleet_broker::Queue::OperationsExecute).await;
    let row = settled_once(fleet, &case, &op, 1).await;
    assert_eq!(row.fence, 1);
    drop(survivor);
}

async fn killed_while_the_provider_commits_is_found_by_lookup(fleet: &mut TestFleet, case: Case) {
    let op = fleet.submit_and_approve(&case.intent).await;
    // The provider holds the request 1 s, then commits it whatever happened to the caller.
    fleet
        .sim_fault(json!({"route": case.route, "kind": "delay", "delay_ms": 1000}))
        .await;
    let mut doomed = fleet.spawn_process("fleet-execute", &[SHORT_LEASE, QUICK_DEADLINE]);
    fleet.provider_received(&op).await;
    doomed.kill9();
    // The provider may commit up to 1 s after the request started: reconcile waits that long.
    let slow = fleet_core::reconcile::ProviderContract {
        max_request_ms: 2_000,
        ..contract(300)
    };
    spawn_reconcile(fleet, slow);
    spawn_execute(fleet);
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
    spawn_execute(fleet);
    let op = fleet.submit_and_approve(&case.intent).await;
    let unknown = fleet.reaches(&op, Status::Unknown).await;
    assert_eq!(
        unknown.status_reason.map(fleet_core::Reason::as_str),
        Some("connection_reset")
    );
    spawn_reconcile(fleet, contract(300));
    settled_once(fleet, &case, &op, 1).await;
    fleet
        .recorded(&op, fleet_core::history::HistoryKind::Lookup)
        .await;
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

#[tokio::test]
async fn a_contract_killed_before_the_call_is_proven_absent_and_sent_once() {
    let (mut fleet, case) = contract_case().await;
    killed_before_the_call_is_proven_absent_and_sent_once(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_contract_killed_after_the_answer_is_found_by_lookup_with_no_second_request() {
    let (mut fleet, case) = contract_case().await;
    killed_after_the_answer_is_found_by_lookup_with_no_second_request(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_contract_killed_after_the_record_is_not_sent_again() {
    let (mut fleet, case) = contract_case().await;
    killed_after_the_record_the_redelivered_doorbell_changes_nothing(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_contract_killed_while_the_provider_commits_is_found_by_lookup() {
    let (mut fleet, case) = contract_case().await;
    killed_while_the_provider_commits_is_found_by_lookup(&mut fleet, case).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_contract_whose_answer_was_lost_after_the_commit_is_found_by_lookup() {
    let (mut fleet, case) = contract_case().await;
    an_answer_lost_after_the_commit_is_unknown_then_found_by_lookup(&mut fleet, case).await;
    fleet.stop().await;
}
