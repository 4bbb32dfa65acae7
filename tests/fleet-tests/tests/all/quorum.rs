//! Approvals of one operation arriving at the same moment, straight at the store function
//! behind fleet-api's approve: distinct approvers are each counted and the operation is
//! approved exactly once; the same approver twice is one approval.

use fleet_core::ApprovalStatus;
use fleet_store::ApprovalOutcome;
use fleet_tests::at;
use fleet_tests::{decider, hash_of, intent, op_of, TestFleet};

/// Rounds of simultaneous approvals; a race between them shows within a few.
const ROUNDS: usize = 20;

/// Stores an intent needing `required` distinct approvers: (operation id, hash).
async fn prepared(fleet: &TestFleet, required: i16) -> (String, String) {
    let i = intent();
    let valid = fleet_core::parse_intent(&serde_json::to_vec(&i).unwrap()).unwrap();
    fleet
        .store
        .insert_prepared(&valid, required, None)
        .await
        .unwrap();
    (op_of(&i), hash_of(&i))
}

async fn count(fleet: &TestFleet, sql: &str, op: &str) -> i64 {
    fleet
        .sql()
        .await
        .query_one(sql, &[&op])
        .await
        .unwrap()
        .get(0)
}

/// The operation's approvals rows, and its history events of `kind`: (approvals, events).
async fn recorded(fleet: &TestFleet, op: &str, kind: &str) -> (i64, i64) {
    let approvals = count(
        fleet,
        "SELECT count(*) FROM approvals WHERE operation_id = $1",
        op,
    )
    .await;
    let events = count(
        fleet,
        &format!(
            "SELECT count(*) FROM operation_events WHERE operation_id = $1 AND kind = '{kind}'"
        ),
        op,
    )
    .await;
    (approvals, events)
}

#[tokio::test]
async fn two_distinct_approvers_at_once_are_both_counted_and_approve_exactly_once() {
    let fleet = TestFleet::start().await;
    for _ in 0..ROUNDS {
        let (op, hash) = prepared(&fleet, 2).await;
        let approve = |name: &'static str| {
            let (store, op, hash) = (fleet.store.clone(), op.clone(), hash.clone());
            tokio::spawn(async move {
                store
                    .approve(at(&op), &hash, &decider(name), None)
                    .await
                    .unwrap()
            })
        };
        let (a, b) = (approve("ann"), approve("ben"));
        let mut outcomes = [a.await.unwrap(), b.await.unwrap()];
        outcomes.sort_by_key(|o| matches!(o, ApprovalOutcome::Approved));
        assert!(
            matches!(outcomes, [ApprovalOutcome::Counted(q), ApprovalOutcome::Approved] if q.received == 1 && q.required == 2),
            "{outcomes:?}"
        );
        let row = fleet.row(&op).await;
        assert_eq!(row.approval_status, ApprovalStatus::Approved);
        assert_eq!(recorded(&fleet, &op, "approved").await, (2, 1));
        // The approval that completed the quorum counted itself: in its history row and in
        // the `approved` event agents receive.
        let counted = fleet
            .sql()
            .await
            .query_one(
                "SELECT (e.evidence->>'approvals_received')::bigint, (o.data->>'approvals_received')::bigint
                 FROM operation_events e JOIN operation_outbox o ON o.history_id = e.id
                 WHERE e.operation_id = $1 AND e.kind = 'approved'",
                &[&op],
            )
            .await
            .unwrap();
        assert_eq!((counted.get::<_, i64>(0), counted.get::<_, i64>(1)), (2, 2));
    }
    fleet.stop().await;
}

#[tokio::test]
async fn the_same_approver_twice_at_once_is_one_approval() {
    let fleet = TestFleet::start().await;
    for _ in 0..ROUNDS {
        let (op, hash) = prepared(&fleet, 2).await;
        let approve = || {
            let (store, op, hash) = (fleet.store.clone(), op.clone(), hash.clone());
            tokio::spawn(async move {
                store
                    .approve(at(&op), &hash, &decider("ann"), None)
                    .await
                    .unwrap()
            })
        };
        let (a, b) = (approve(), approve());
        let mut outcomes = [a.await.unwrap(), b.await.unwrap()];
        outcomes.sort_by_key(|o| matches!(o, ApprovalOutcome::AlreadyCounted));
        assert!(
            matches!(outcomes, [ApprovalOutcome::Counted(q), ApprovalOutcome::AlreadyCounted] if q.received == 1),
            "{outcomes:?}"
        );
        assert_eq!(
            fleet.row(&op).await.approval_status,
            ApprovalStatus::Pending
        );
        // The second approval wrote nothing: one bookkeeping row, of the first.
        assert_eq!(recorded(&fleet, &op, "approval_recorded").await, (1, 1));
    }
    fleet.stop().await;
}
