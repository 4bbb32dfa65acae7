//! fleet-execute against real Postgres, RabbitMQ and the provider simulator over HTTP:
//! approved means exactly one provider effect, whatever the broker redelivers.

use fleet_tests::at;
use std::sync::Arc;

use fleet_broker::Queue;
use fleet_core::{ApprovalStatus, AttemptOutcome, OperationId, Status};
use fleet_execute::{ExecuteHandler, ExecuteSettings};
use fleet_tests::{eventually, hash_of, intent, TestFleet};
use serde_json::json;

/// Submits an intent, waits until it is prepared, and returns (fleet, op, hash).
async fn prepared(intent: serde_json::Value) -> (TestFleet, String, String) {
    let fleet = TestFleet::with_prepare().await;
    let op = fleet.submitted(&intent).await;
    (fleet, op, hash_of(&intent))
}

#[tokio::test]
async fn happy_path_submit_approve_succeeds_with_exactly_one_payment() {
    let (mut fleet, op, hash) = prepared(intent()).await;
    fleet.spawn_execute();
    assert!(
        fleet.approve(&op, &hash).await.unwrap(),
        "the execute bell rang"
    );
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_effects(&op).await, 1);
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(row.fence, 1);
    assert_eq!(row.approved_hash.as_deref(), Some(hash.as_str()));
    assert!(row
        .external_id
        .as_deref()
        .is_some_and(|id| id.starts_with("pay_")));
    assert!(row.resolved_at.is_some() && row.lease_owner.is_none());
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        (attempts[0].outcome, attempts[0].http_status),
        (Some(AttemptOutcome::Succeeded), Some(201))
    );
    let kinds: Vec<_> = fleet
        .history(&op)
        .await
        .into_iter()
        .map(|e| (e.kind, e.to_status))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                fleet_core::history::HistoryKind::Prepared,
                Some(fleet_core::Status::NotStarted)
            ),
            (fleet_core::history::HistoryKind::Approved, None),
            (
                fleet_core::history::HistoryKind::Transition,
                Some(fleet_core::Status::InProgress)
            ),
            (
                fleet_core::history::HistoryKind::Transition,
                Some(fleet_core::Status::Succeeded)
            ),
        ]
    );
    fleet.stop().await;
}

#[tokio::test]
async fn the_same_execute_doorbell_delivered_five_times_makes_one_provider_post() {
    let (mut fleet, op, hash) = prepared(intent()).await;
    // Approve before any worker listens, then ring four more times: five bells queued.
    fleet.approve(&op, &hash).await.unwrap();
    for _ in 0..4 {
        fleet.ring_execute(&op).await;
    }
    fleet.spawn_execute();
    fleet.reaches(&op, Status::Succeeded).await;
    // Wait for the queue to drain so every bell has been handled before counting.
    fleet.drained(fleet_broker::Queue::OperationsExecute).await;
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(fleet.sim_effects(&op).await, 1);
    assert_eq!(fleet.row(&op).await.fence, 1, "one claim");
    fleet.stop().await;
}

#[tokio::test]
async fn two_execute_workers_racing_on_one_operation_make_one_post_and_one_claim() {
    let (fleet, op, hash) = prepared(intent()).await;
    fleet.approve_without_ringing(&op, &hash).await;
    // Slow provider: the first call is still in flight while the second worker tries.
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": 300}))
        .await;
    let a = Arc::new(ExecuteHandler::new(
        fleet.execute_deps(ExecuteSettings::default()),
    ));
    let b = Arc::new(ExecuteHandler::new(
        fleet.execute_deps(ExecuteSettings::default()),
    ));
    let id = OperationId::parse(&op).unwrap();
    let (ra, rb) = tokio::join!(a.resume(at(id.as_str())), b.resume(at(id.as_str())));
    ra.unwrap();
    rb.unwrap();
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.fence, 1, "exactly one claim");
    assert_eq!(fleet.store.attempts(at(&op)).await.unwrap().len(), 1);
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(fleet.sim_effects(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_claims_of_one_operation_yield_one_claim() {
    let (fleet, op, hash) = prepared(intent()).await;
    fleet.approve_without_ringing(&op, &hash).await;
    let row = fleet.row(&op).await;
    let handles: Vec<_> = (0..32)
        .map(|i| {
            let store = fleet.store.clone();
            let op = op.clone();
            tokio::spawn(async move {
                store
                    .claim(at(&op), row.fence, &format!("racer-{i}"), 30_000)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut won = 0;
    for h in handles {
        if matches!(h.await.unwrap(), fleet_store::Claim::Claimed(_)) {
            won += 1;
        }
    }
    assert_eq!(won, 1, "exactly one of 32 concurrent claims wins");
    assert_eq!(fleet.row(&op).await.fence, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn an_approval_that_expired_before_execution_is_cancelled_with_zero_provider_calls() {
    let mut short = intent();
    short["approval_ttl_seconds"] = json!(1);
    let (mut fleet, op, hash) = prepared(short).await;
    fleet.approve(&op, &hash).await.unwrap();
    // No execute worker yet: wait until the database clock says the approval expired.
    let store = fleet.store.clone();
    eventually("the approval to expire", || {
        let store = store.clone();
        let op = op.clone();
        async move {
            store
                .get(at(&op))
                .await
                .unwrap()
                .filter(|r| r.approval_expired)
        }
    })
    .await;
    fleet.spawn_execute();
    let row = fleet.reaches(&op, Status::Cancelled).await;
    assert_eq!(
        row.status_reason.map(fleet_core::Reason::as_str),
        Some("approval_expired")
    );
    assert_eq!(row.approval_status, ApprovalStatus::Expired);
    assert_eq!(row.fence, 0, "never claimed");
    assert_eq!(fleet.sim_posts(&op).await, 0);
    assert!(fleet.store.attempts(at(&op)).await.unwrap().is_empty());
    fleet.stop().await;
}

#[tokio::test]
async fn approving_with_a_hash_that_is_not_the_stored_one_is_refused_and_changes_nothing() {
    let (fleet, op, _) = prepared(intent()).await;
    let before = fleet.row(&op).await;
    let other = hash_of(&fleet_tests::with_amount(intent(), json!(1)));
    let err = fleet.approve(&op, &other).await.unwrap_err();
    assert!(
        matches!(err, fleet_store::ApprovalOutcome::HashMismatch { .. }),
        "{err:?}"
    );
    let after = fleet.row(&op).await;
    assert_eq!(
        (after.approval_status, after.approved_hash.as_deref()),
        (ApprovalStatus::Pending, None)
    );
    assert_eq!(after.updated_at, before.updated_at);
    assert_eq!(
        fleet.store.events(at(&op)).await.unwrap().len(),
        1,
        "no approval event"
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM approvals").await,
        0,
        "no approval recorded"
    );
    assert_eq!(
        fleet_broker::message_count(&fleet.broker, Queue::OperationsExecute)
            .await
            .unwrap(),
        0,
        "no bell rung"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_402_from_the_provider_fails_the_operation_with_its_error_code() {
    let mut closed = intent();
    closed["payload"]["beneficiary_id"] = json!("closed_vendor_77");
    let (mut fleet, op, hash) = prepared(closed).await;
    fleet.spawn_execute();
    fleet.approve(&op, &hash).await.unwrap();
    let row = fleet.reaches(&op, Status::Failed).await;
    assert_eq!(row.error_code.as_deref(), Some("account_closed"));
    assert_eq!(fleet.sim_effects(&op).await, 0);
    assert_eq!(fleet.sim_posts(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_500_from_the_provider_makes_the_operation_unknown_and_it_is_never_retried_here() {
    let (mut fleet, op, hash) = prepared(intent()).await;
    fleet
        .sim_fault(
            json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
        )
        .await;
    fleet.spawn_execute();
    fleet.approve(&op, &hash).await.unwrap();
    let row = fleet.reaches(&op, Status::Unknown).await;
    assert_eq!(
        row.status_reason.map(fleet_core::Reason::as_str),
        Some("http_500")
    );
    assert!(row.unknown_since.is_some());
    // More bells change nothing: execute never calls again for an unknown operation.
    for _ in 0..3 {
        fleet.ring_execute(&op).await;
    }
    fleet.drained(fleet_broker::Queue::OperationsExecute).await;
    assert_eq!(fleet.sim_posts(&op).await, 1, "exactly one POST");
    assert_eq!(
        fleet.sim_effects(&op).await,
        1,
        "the provider did act: only a lookup can tell"
    );
    assert_eq!(fleet.row(&op).await.status, Status::Unknown);
    fleet.stop().await;
}
