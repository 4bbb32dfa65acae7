//! Crash safety with real processes: `fleet-execute` runs as a child process and is
//! killed with SIGKILL (or stopped with SIGSTOP) inside each crash window; reconcile and
//! the provider simulator then have to bring every operation to the truth with exactly one
//! payment and no blind retry.

use fleet_tests::{at, reference};
use std::sync::Arc;

use fleet_core::Status;
use fleet_execute::ExecuteSettings;
use fleet_reconcile::Reconciler;
use fleet_tests::{contract, eventually, fast_reconcile, hash_of, intent, TestFleet};
use serde_json::{json, Value};

/// A fleet with prepare running and one prepared, approved operation (its execute bell
/// rung). Returns the fleet and the operation id.
async fn approved() -> (TestFleet, String) {
    let fleet = TestFleet::with_prepare().await;
    let i = intent();
    let op = fleet.submit_and_approve(&i).await;
    (fleet, op)
}

/// An approved operation that the provider's `fault` made `unknown` (execute running).
async fn unknown_after(fault: Value) -> (TestFleet, String) {
    let (mut fleet, op) = approved().await;
    fleet.sim_fault(fault).await;
    fleet.spawn_execute();
    fleet.reaches(&op, Status::Unknown).await;
    (fleet, op)
}

const SHORT_LEASE: [(&str, &str); 1] = [("LEASE_TTL_MS", "1500")];

/// Every POST for the operation carried its one idempotency key.
/// Kills an execute with a short lease where it stops at `pause` (the row is left in
/// progress, nothing recorded), then starts reconcile and a healthy execute: the row
/// once it succeeded.
async fn killed_at_then_finished(
    fleet: &mut TestFleet,
    op: &str,
    pause: &str,
) -> fleet_store::OperationRow {
    let mut doomed = fleet.spawn_process(
        "fleet-execute",
        &[SHORT_LEASE[0], ("FLEET_PAUSE_AT", pause)],
    );
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    doomed.kill9();
    assert_eq!(
        fleet.row(op).await.status,
        Status::InProgress,
        "nothing was recorded"
    );
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.spawn_execute();
    fleet.reaches(op, Status::Succeeded).await
}

/// [`killed_at_then_finished`] where the killed worker never sent: the second claim did
/// the work, in one POST under the operation's one key, paying once.
async fn killed_before_sending_then_finished(
    fleet: &mut TestFleet,
    op: &str,
    pause: &str,
) -> fleet_store::OperationRow {
    let row = killed_at_then_finished(fleet, op, pause).await;
    assert_eq!(row.fence, 2, "the second claim did the work");
    assert_eq!(fleet.sim_posts(op).await, 1, "the killed worker never sent");
    assert_eq!(fleet.sim_effects(op).await, 1);
    assert_one_key(fleet, op).await;
    row
}

/// An approved operation whose POST the provider holds `delay_ms` before it commits
/// (whatever happens to the caller meanwhile), and an execute with a short lease that
/// sent it: the fleet, the operation and that worker.
async fn held_by_the_provider(delay_ms: u64) -> (TestFleet, String, fleet_tests::WorkerProcess) {
    let (fleet, op) = approved().await;
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": delay_ms}))
        .await;
    let worker = fleet.spawn_process("fleet-execute", &SHORT_LEASE);
    fleet.provider_received(&op).await;
    (fleet, op, worker)
}

async fn assert_one_key(fleet: &TestFleet, op: &str) {
    for r in fleet.sim_requests(Some(op)).await {
        assert_eq!(r["idempotency_key"], json!(reference(op)), "{r}");
    }
}

async fn transitions_to(fleet: &TestFleet, op: &str, status: &str) -> usize {
    fleet
        .store
        .events(at(op))
        .await
        .unwrap()
        .iter()
        .filter(|e| {
            e.kind == fleet_core::history::HistoryKind::Transition
                && e.to_status.map(fleet_core::Status::as_str) == Some(status)
        })
        .count()
}

#[tokio::test]
async fn killed_after_the_claim_before_its_send_mark_is_released_not_sent_without_a_lookup() {
    let (mut fleet, op) = approved().await;
    // reconcile: lease expiry, and the attempt's mark still says nothing was sent →
    // not_started at once, no lookup → a healthy worker sends it with the same key.
    let row = killed_before_sending_then_finished(&mut fleet, &op, "before_provider_call").await;
    assert_eq!(row.unknown_since, None, "never unknown");
    let events = fleet.store.events(at(&op)).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.reason == Some(fleet_core::Reason::ClaimLostBeforeSend)),
        "released as not sent: {events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| e.kind == fleet_core::history::HistoryKind::Lookup),
        "nothing was looked up: {events:?}"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn killed_after_the_send_mark_before_the_call_is_proven_absent_and_retried_with_the_same_key()
{
    let (mut fleet, op) = approved().await;
    // The mark is committed: the request may have left, so only a lookup may say it did
    // not.
    // reconcile: lease expiry → unknown → the search (after its lag) proves absence →
    // not_started → a healthy worker retries with the same key.
    killed_before_sending_then_finished(&mut fleet, &op, "after_send_mark").await;
    let events = fleet.store.events(at(&op)).await.unwrap();
    let absent = events
        .iter()
        .position(|e| e.reason.map(fleet_core::Reason::as_str) == Some("lookup_proved_absence"))
        .expect("a lookup proved absence");
    assert!(
        events[..absent]
            .iter()
            .any(|e| e.kind == fleet_core::history::HistoryKind::Lookup),
        "the absence was looked up before the retry"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn killed_while_the_provider_commits_is_found_by_lookup_with_no_second_post() {
    // The provider holds the request 1 s, then commits it whatever happened to the caller.
    let (mut fleet, op, mut doomed) = held_by_the_provider(1_000).await;
    doomed.kill9();
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.spawn_execute();
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert!(row.external_id.is_some());
    assert_eq!(fleet.sim_posts(&op).await, 1, "zero additional POSTs");
    assert_eq!(fleet.sim_effects(&op).await, 1);
    assert_eq!(row.fence, 1, "never claimed again");
    fleet.stop().await;
}

#[tokio::test]
async fn a_response_dropped_after_commit_is_unknown_then_found_by_lookup() {
    let (mut fleet, op) =
        unknown_after(json!({"route": "POST /v1/payments", "kind": "drop_after_commit"})).await;
    let unknown = fleet.row(&op).await;
    assert_eq!(
        unknown.status_reason.map(fleet_core::Reason::as_str),
        Some("connection_reset")
    );
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(fleet.sim_effects(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn killed_after_the_response_before_the_row_was_written_is_found_by_lookup() {
    let (mut fleet, op) = approved().await;
    let row = killed_at_then_finished(&mut fleet, &op, "after_provider_response").await;
    assert_eq!(row.fence, 1);
    assert_eq!(fleet.sim_posts(&op).await, 1, "zero additional POSTs");
    assert_eq!(fleet.sim_effects(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn killed_after_the_row_was_written_before_the_ack_the_redelivered_doorbell_changes_nothing()
{
    let (fleet, op) = approved().await;
    let mut doomed = fleet.spawn_process("fleet-execute", &[("FLEET_PAUSE_AT", "after_record")]);
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    assert_eq!(fleet.row(&op).await.status, Status::Succeeded);
    doomed.kill9();
    // The unacked doorbell goes back to the queue; a fresh worker takes it.
    let survivor = fleet.spawn_process("fleet-execute", &[]);
    let broker = fleet.broker.clone();
    eventually("the redelivered doorbell to be consumed", || {
        let broker = broker.clone();
        async move {
            (fleet_broker::message_count(&broker, fleet_broker::Queue::OperationsExecute)
                .await
                .ok()?
                == 0)
                .then_some(())
        }
    })
    .await;
    survivor.wait_for_log("consumer subscribed").await;
    let row = fleet.row(&op).await;
    assert_eq!((row.status, row.fence), (Status::Succeeded, 1));
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(transitions_to(&fleet, &op, "succeeded").await, 1);
    drop(survivor);
    fleet.stop().await;
}

#[tokio::test]
async fn a_saved_500_after_commit_is_unknown_until_the_lookup_finds_the_payment() {
    let (mut fleet, op) = unknown_after(
        json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
    )
    .await;
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert!(row
        .external_id
        .as_deref()
        .is_some_and(|id| id.starts_with("pay_")));
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(fleet.sim_effects(&op).await, 1);
    let lookups: Vec<_> = fleet
        .history(&op)
        .await
        .into_iter()
        .filter(|e| e.kind == fleet_core::history::HistoryKind::Lookup)
        .collect();
    assert!(!lookups.is_empty(), "resolved by a recorded lookup");
    fleet.stop().await;
}

#[tokio::test]
async fn a_timeout_with_a_lagging_search_stays_unknown_until_the_lag_bound_then_resolves_without_a_second_post(
) {
    let mut fleet = TestFleet::start_with_sim(fleet_provider_sim::SimConfig {
        search_lag_ms: 1_000,
        ..Default::default()
    })
    .await;
    fleet.spawn_prepare();
    let i = intent();
    let op = fleet.submitted(&i).await;
    // The provider takes 500 ms; the worker gives up after 200 ms: unknown.
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": 500}))
        .await;
    let mut providers = fleet.provider_configs();
    providers.provider_mut("payments").timeout_ms = 200;
    let handler = fleet_execute::ExecuteHandler::new(
        fleet.execute_deps_with(ExecuteSettings::default(), &providers),
    );
    fleet.approve_without_ringing(&op, &hash_of(&i)).await;
    handler.resume(at(&op)).await.unwrap();
    assert_eq!(fleet.reason_of(&op).await, Some("timeout"));
    // The documented lag bound (3 s) is longer than the real one (1 s after creation).
    fleet.spawn_reconcile(contract(3_000), fast_reconcile());
    fleet.spawn_execute();
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.fence, 1, "no second claim");
    assert_eq!(fleet.sim_posts(&op).await, 1, "never a second POST");
    let events = fleet.store.events(at(&op)).await.unwrap();
    let empty_lookups = events
        .iter()
        .filter(|e| {
            e.kind == fleet_core::history::HistoryKind::Lookup
                && e.evidence.as_ref().is_some_and(|v| v["found"] == json!([]))
        })
        .count();
    assert!(
        empty_lookups >= 1,
        "the search first found nothing and reconcile waited: {events:?}"
    );
    assert!(!events
        .iter()
        .any(|e| e.reason.map(fleet_core::Reason::as_str) == Some("lookup_proved_absence")));
    fleet.stop().await;
}

#[tokio::test]
async fn two_payments_for_one_reference_are_escalated_and_none_is_chosen() {
    let (mut fleet, op) =
        unknown_after(json!({"route": "POST /v1/payments", "kind": "drop_after_commit"})).await;
    // Someone else created a second payment with our reference (another key).
    fleet.sim_foreign_payment(&op).await;
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    let row = fleet.escalated(&op).await;
    assert_eq!(row.status, Status::Unknown);
    assert_eq!(
        row.status_reason.map(fleet_core::Reason::as_str),
        Some("multiple_matches")
    );
    assert_eq!(row.external_id, None, "nothing chosen automatically");
    assert_eq!(fleet.sim_effects(&op).await, 2);
    fleet.stop().await;
}

#[tokio::test]
async fn a_paused_worker_cannot_move_the_row_its_result_lands_only_in_attempts() {
    let (mut fleet, op, paused) = held_by_the_provider(2_500).await;
    paused.pause();
    // Past its lease the operation becomes unknown and is settled by lookup once the
    // provider commits (2.5 s); the paused worker sleeps through all of it.
    fleet.spawn_reconcile(contract(5_000), fast_reconcile());
    fleet.reaches(&op, Status::Succeeded).await;
    paused.resume();
    let store = fleet.store.clone();
    let attempt = eventually("the paused worker to record its attempt", || {
        let store = store.clone();
        let op = op.clone();
        async move {
            store
                .attempts(at(&op))
                .await
                .unwrap()
                .into_iter()
                .find(|a| a.fence == 1 && a.finished_at.is_some())
        }
    })
    .await;
    assert!(attempt.outcome.is_some());
    let row = fleet.row(&op).await;
    assert_eq!(row.status, Status::Succeeded);
    assert_eq!(
        transitions_to(&fleet, &op, "succeeded").await,
        1,
        "resolved once"
    );
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(fleet.sim_effects(&op).await, 1);
    drop(paused);
    fleet.stop().await;
}

#[tokio::test]
async fn two_reconcile_workers_on_the_same_operation_resolve_it_once() {
    let (fleet, op) = unknown_after(
        json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 503}),
    )
    .await;
    let a = Arc::new(Reconciler::new(
        &fleet.reconcile_deps(contract(0), fast_reconcile()),
    ));
    let b = Arc::new(Reconciler::new(
        &fleet.reconcile_deps(contract(0), fast_reconcile()),
    ));
    let (ra, rb) = tokio::join!(a.reconcile(at(&op)), b.reconcile(at(&op)));
    ra.unwrap();
    rb.unwrap();
    assert_eq!(fleet.row(&op).await.status, Status::Succeeded);
    assert_eq!(transitions_to(&fleet, &op, "succeeded").await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_lost_execute_doorbell_is_rung_again_by_the_sweeper() {
    let mut fleet = TestFleet::with_prepare().await;
    let i = intent();
    let op = fleet.submitted(&i).await;
    // Approved, but the doorbell is lost: approve without ringing.
    fleet.approve_without_ringing(&op, &hash_of(&i)).await;
    fleet.spawn_execute();
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_posts(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn an_unknown_operation_whose_key_may_have_expired_is_escalated_never_retried() {
    let (mut fleet, op) =
        unknown_after(json!({"route": "POST /v1/payments", "kind": "drop_before_commit"})).await;
    // A provider that keeps keys one minute: every attempt is within the safety margin
    // of the end of retention, so a retry could double-charge.
    let short_retention = fleet_core::reconcile::ProviderContract {
        key_retention_ms: 60_000,
        ..contract(0)
    };
    fleet.spawn_reconcile(short_retention, fast_reconcile());
    fleet.escalated_past_key_retention(&op).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_accepted_payment_with_no_webhook_past_its_deadline_is_resolved_by_lookup() {
    let mut fleet = TestFleet::start_with_sim(fleet_provider_sim::SimConfig {
        default_payment_status: "pending".into(),
        ..Default::default()
    })
    .await;
    fleet.spawn_prepare();
    fleet.spawn_execute_with(ExecuteSettings {
        accepted_deadline_s: 1,
        ..ExecuteSettings::default()
    });
    let i = intent();
    let op = fleet.submit_and_approve(&i).await;
    let accepted = fleet.reaches(&op, Status::Accepted).await;
    assert!(accepted.deadline_at.is_some());
    // The provider settles it, but its webhook never arrives (none is configured).
    let payment_id = accepted.external_id.clone().unwrap();
    fleet
        .sim_post(
            &format!("/_sim/payments/{payment_id}/settle"),
            json!({"status": "succeeded"}),
        )
        .await;
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), Some(payment_id.as_str()));
    assert!(
        fleet
            .history(&op)
            .await
            .iter()
            .any(|e| e.kind == fleet_core::history::HistoryKind::Lookup),
        "settled by a recorded lookup"
    );
    assert_eq!(fleet.sim_posts(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_saved_error_for_a_payment_that_never_happened_is_escalated_after_one_replay() {
    // The provider refuses the payment (closed account) but a fault saves a 500 under the
    // key: no effect exists, yet every same-key retry replays the 500.
    let mut fleet = TestFleet::with_prepare().await;
    let mut closed = intent();
    closed["payload"]["beneficiary_id"] = json!("closed_vendor_77");
    let op = fleet.submitted(&closed).await;
    fleet
        .sim_fault(
            json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
        )
        .await;
    fleet.spawn_execute();
    fleet.approve(&op, &hash_of(&closed)).await.unwrap();
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet
        .escalated_as(&op, Status::Unknown, "saved_error_replayed")
        .await;
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert_eq!(
        attempts.len(),
        2,
        "one retry proved the key holds the error"
    );
    assert_eq!(attempts[1].replayed, Some(true));
    assert_eq!(fleet.sim_effects(&op).await, 0);
    fleet.stop().await;
}
