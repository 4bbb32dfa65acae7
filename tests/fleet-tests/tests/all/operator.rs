//! Operator decisions through the store's decision functions (what fleet-api calls once
//! the operator is authorized): each is an event with its actor and how they signed in,
//! the state machine decides what is allowed, and workers never move a disputed row.

use fleet_core::{Resolution, Status};
use fleet_store::{DecisionOutcome, Resolve};
use fleet_tests::{at, contract, decider, fast_reconcile, hash_of, intent, TestFleet};
use serde_json::json;

async fn unknown_operation() -> (TestFleet, String) {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let i = intent();
    let op = fleet.submitted(&i).await;
    fleet
        .sim_fault(
            json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
        )
        .await;
    fleet.approve(&op, &hash_of(&i)).await.unwrap();
    fleet.reaches(&op, Status::Unknown).await;
    (fleet, op)
}

/// The store's answer to dana, an operator, resolving the operation with `r`.
async fn resolved_by_dana(fleet: &TestFleet, op: &str, r: Resolve<'_>) -> DecisionOutcome {
    fleet
        .store
        .resolve(at(op), r, &decider("dana"))
        .await
        .unwrap()
}

#[tokio::test]
async fn an_operator_resolves_an_unknown_operation_with_evidence_recorded_as_theirs() {
    let (fleet, op) = unknown_operation().await;
    let r = Resolve {
        outcome: Resolution::Succeeded,
        external_id: Some("pay_checked_by_hand"),
        evidence: "seen in the provider dashboard",
    };
    assert_eq!(
        resolved_by_dana(&fleet, &op, r).await,
        DecisionOutcome::Moved(fleet_core::Status::Succeeded)
    );
    let last = fleet
        .resolved_succeeded(&op, "pay_checked_by_hand", "operator:dana")
        .await;
    let signed_in: Option<String> = fleet
        .sql()
        .await
        .query_one(
            "SELECT signed_in_with FROM operation_events WHERE id = $1",
            &[&last.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(signed_in.as_deref(), Some("token"));
    assert_eq!(
        last.evidence.unwrap()["evidence"],
        json!("seen in the provider dashboard")
    );
    // A final operation cannot be resolved again.
    let again = Resolve {
        outcome: Resolution::Failed,
        external_id: None,
        evidence: "changed my mind",
    };
    assert_eq!(
        resolved_by_dana(&fleet, &op, again).await,
        DecisionOutcome::Refused {
            status: Status::Succeeded
        }
    );
    fleet.stop().await;
}

#[tokio::test]
async fn workers_never_move_a_disputed_operation() {
    let (mut fleet, op) = unknown_operation().await;
    assert_eq!(
        fleet
            .store
            .dispute(at(&op), "customer says charged twice", &decider("dana"))
            .await
            .unwrap(),
        DecisionOutcome::Moved(fleet_core::Status::Disputed)
    );
    assert_eq!(fleet.row(&op).await.status, Status::Disputed);
    // reconcile would find the payment; it must leave the disputed row alone.
    fleet.spawn_reconcile(contract(0), fast_reconcile());
    let reconciler =
        fleet_reconcile::Reconciler::new(&fleet.reconcile_deps(contract(0), fast_reconcile()));
    reconciler.reconcile(at(&op)).await.unwrap();
    fleet.ring_execute(&op).await;
    fleet.drained(fleet_broker::Queue::OperationsExecute).await;
    let row = fleet.row(&op).await;
    assert_eq!(row.status, Status::Disputed);
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert!(
        fleet
            .history(&op)
            .await
            .iter()
            .all(|e| e.kind != fleet_core::history::HistoryKind::Lookup),
        "not even looked up"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn resolving_as_succeeded_without_an_external_id_is_refused() {
    let (fleet, op) = unknown_operation().await;
    let r = Resolve {
        outcome: Resolution::Succeeded,
        external_id: None,
        evidence: "trust me",
    };
    assert_eq!(
        resolved_by_dana(&fleet, &op, r).await,
        DecisionOutcome::ExternalIdRequired
    );
    assert_eq!(fleet.row(&op).await.status, Status::Unknown);
    fleet.stop().await;
}

#[tokio::test]
async fn every_worker_move_is_stale_once_escalated() {
    let (fleet, op) = unknown_operation().await;
    let row = fleet.row(&op).await;
    fleet
        .escalate(&op, &row, fleet_core::Reason::LookupFailedRepeatedly)
        .await;
    // Another reconciler, working from its older read, tries to send the row back.
    for event in [
        fleet_core::Event::LookupAbsent,
        fleet_core::Event::LookupSucceeded,
        fleet_core::Event::WebhookFailed,
        fleet_core::Event::Escalate,
    ] {
        let worker_move = fleet_store::Transition {
            external_id: Some("pay_x"),
            ..fleet_store::Transition::new(
                at(&op),
                fleet_core::Status::Unknown,
                row.fence,
                event,
                "reconcile",
            )
        };
        assert_eq!(
            fleet.store.transition(worker_move, None).await.unwrap(),
            fleet_store::TransitionOutcome::Stale,
            "{event:?}"
        );
    }
    let after = fleet.row(&op).await;
    assert_eq!(after.status, Status::Unknown);
    assert!(after.escalated_at.is_some());
    fleet.stop().await;
}
