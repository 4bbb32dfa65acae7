//! The SQL function `operation_view(o)` pinned to core's `OperationView`, status by
//! status: real operations, prepared by the prepare worker (so with the payee evidence and
//! the risk cues intake finds) and moved by the store functions the workers and the API
//! use, into every status and approval status of the state table, escalated, rejected,
//! expired, confirmed by an answer and by an operator. Each view the function writes must
//! read into the type (unknown members refused) and be written back as the same JSON, and
//! the store must answer the same view.
//!
//! The outcome events carry the same view: each move's newest event, read from the outbox
//! as the relay reads it (`EventData::read`, unknown members refused), must hold the view
//! the store answers right after the move, and every event the run wrote must read into
//! the type and be written back unchanged, so what agents receive cannot drift from the
//! type either.

use std::collections::BTreeSet;

use fleet_core::events::{EventData, EventType, OperationEventData};

use fleet_core::confirmation::Confirmation;
use fleet_core::{
    ApprovalStatus, AttemptOutcome, AttemptRecord, Event, OperationView, Reason, Resolution, Status,
};
use fleet_store::{Claim, DecisionOutcome, Resolve, Transition, TransitionOutcome};
use fleet_tests::{at, decider, hash_of, intent, TestFleet};
use serde_json::Value;

const OWNER: &str = "execute-view-test";

/// What the function writes for `op`, read into the type and written back unchanged.
async fn pinned(fleet: &TestFleet, op: &str) -> OperationView {
    let sql = fleet.sql().await;
    let json: Value = sql
        .query_one(
            "SELECT operation_view(o) FROM operations o WHERE o.operation_id = $1",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    let view =
        OperationView::from_json(json.clone()).unwrap_or_else(|e| panic!("{op}: {e}\n{json:#}"));
    assert_eq!(view.to_json(), json, "{op}: written back otherwise");
    let served = fleet.store.operation_view(at(op)).await.unwrap();
    assert_eq!(served.as_ref(), Some(&view), "{op}: the store's view");
    let (event_type, event) = newest_event(fleet, op).await;
    assert_eq!(
        event.view,
        view,
        "{op}: the {} event carries the view the API serves",
        event_type.as_str()
    );
    view
}

/// Every event the outbox holds for `op` (or for every operation with `None`), oldest
/// first, its `data` read as the relay reads it: (type, data, the stored JSON).
async fn outbox(fleet: &TestFleet, op: Option<&str>) -> Vec<(EventType, EventData, Value)> {
    let rows = fleet
        .sql()
        .await
        .query(
            "SELECT event_type, data FROM operation_outbox
             WHERE $1::text IS NULL OR operation_id = $1 ORDER BY id",
            &[&op],
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            let event_type = EventType::parse(r.get(0)).expect("a known event type");
            let json: Value = r.get(1);
            let data = EventData::read(event_type, json.clone())
                .unwrap_or_else(|e| panic!("a {} event: {e}\n{json:#}", event_type.as_str()));
            (event_type, data, json)
        })
        .collect()
}

/// The newest event of `op`, an operation's.
async fn newest_event(fleet: &TestFleet, op: &str) -> (EventType, OperationEventData) {
    let (event_type, data, _) = outbox(fleet, Some(op)).await.pop().expect("an event");
    let data = data.into_operation().expect("an operation's event");
    (event_type, *data)
}

/// A payment prepared by the prepare worker, pending: (id, hash).
async fn pending(fleet: &TestFleet) -> (String, String) {
    let i = intent();
    let op = fleet.submitted(&i).await;
    (op, hash_of(&i))
}

async fn approved(fleet: &TestFleet) -> String {
    let (op, hash) = pending(fleet).await;
    fleet.approve_without_ringing(&op, &hash).await;
    op
}

/// Approved and claimed: (id, fence).
async fn claimed(fleet: &TestFleet) -> (String, i64) {
    let op = approved(fleet).await;
    let Claim::Claimed(c) = fleet
        .store
        .claim_ready(at(&op), &[], OWNER, 30_000)
        .await
        .unwrap()
    else {
        panic!("{op}: an approved operation is claimable");
    };
    (op, c.fence)
}

/// Claimed, then moved by execute's answer `event`.
async fn answered(fleet: &TestFleet, event: Event, outcome: AttemptOutcome) -> String {
    let (op, fence) = claimed(fleet).await;
    let object = format!("pay_{}", &op[3..]);
    let succeeded = outcome == AttemptOutcome::Succeeded;
    let t = Transition {
        external_id: matches!(
            outcome,
            AttemptOutcome::Succeeded | AttemptOutcome::Accepted
        )
        .then_some(object.as_str()),
        error_code: (outcome == AttemptOutcome::Failed).then_some("insufficient_funds"),
        deadline_s: (outcome == AttemptOutcome::Accepted).then_some(3600.0),
        reason: (outcome == AttemptOutcome::Unknown).then_some(Reason::Timeout),
        confirmation: succeeded.then(|| Confirmation::Answer {
            object_id: object.clone(),
            fence,
            provider_request_id: Some("req_1".to_owned()),
        }),
        ..Transition::new(at(&op), Status::InProgress, fence, event, "execute")
    };
    let attempt = AttemptRecord {
        external_id: succeeded.then(|| object.clone()),
        ..AttemptRecord::new(outcome)
    };
    let moved = fleet.store.transition(t, Some(&attempt)).await.unwrap();
    assert!(
        matches!(moved, TransitionOutcome::Moved { .. }),
        "{op}: {moved:?}"
    );
    op
}

#[tokio::test]
async fn the_view_of_every_status_reads_into_the_type_and_back_unchanged() {
    let fleet = TestFleet::with_prepare().await;
    let mut seen = Vec::new();

    let (op, _) = pending(&fleet).await;
    let view = pinned(&fleet, &op).await;
    assert_eq!(
        (view.status, view.approval_status),
        (Status::NotStarted, ApprovalStatus::Pending)
    );
    assert!(
        view.payee.is_some() && view.risk.is_some(),
        "intake's evidence is in the view: {view:?}"
    );
    seen.push(view);

    let op = approved(&fleet).await;
    seen.push(pinned(&fleet, &op).await);

    let (op, _) = pending(&fleet).await;
    let rejected = fleet
        .store
        .reject(at(&op), &decider("rita"), "not this invoice")
        .await
        .unwrap();
    assert_eq!(rejected, fleet_store::RejectOutcome::Rejected);
    let view = pinned(&fleet, &op).await;
    assert_eq!(view.approval_status, ApprovalStatus::Rejected);
    seen.push(view);

    let (op, _) = pending(&fleet).await;
    fleet
        .sql()
        .await
        .execute(
            "UPDATE operations SET approval_expires_at = now() - interval '1 second'
             WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap();
    assert!(fleet.store.cancel_expired_approvals(100).await.unwrap() >= 1);
    let view = pinned(&fleet, &op).await;
    assert_eq!(view.approval_status, ApprovalStatus::Expired);
    seen.push(view);

    let (op, _) = claimed(&fleet).await;
    seen.push(pinned(&fleet, &op).await);

    for (event, outcome) in [
        (Event::ProviderAccepted, AttemptOutcome::Accepted),
        (Event::ProviderAmbiguous, AttemptOutcome::Unknown),
        (Event::ProviderSucceeded, AttemptOutcome::Succeeded),
        (Event::ProviderFailed, AttemptOutcome::Failed),
    ] {
        let op = answered(&fleet, event, outcome).await;
        seen.push(pinned(&fleet, &op).await);
    }

    // Unknown, escalated to a person, who settles it as succeeded from their evidence.
    let op = answered(&fleet, Event::ProviderAmbiguous, AttemptOutcome::Unknown).await;
    let row = fleet.row(&op).await;
    fleet
        .escalate(&op, &row, Reason::LookupFailedRepeatedly)
        .await;
    let view = pinned(&fleet, &op).await;
    assert!(view.escalated && view.escalated_at.is_some());
    seen.push(view);
    let resolved = fleet
        .store
        .resolve(
            at(&op),
            Resolve {
                outcome: Resolution::Succeeded,
                external_id: Some("pay_found_by_hand"),
                evidence: "the provider's dashboard shows it paid",
            },
            &decider("olga"),
        )
        .await
        .unwrap();
    assert_eq!(resolved, DecisionOutcome::Moved(Status::Succeeded));
    let view = pinned(&fleet, &op).await;
    assert!(matches!(
        view.confirmation,
        Some(Confirmation::Operator { .. })
    ));
    seen.push(view);

    let op = approved(&fleet).await;
    let disputed = fleet
        .store
        .dispute(
            at(&op),
            "the payee says it was never asked for",
            &decider("olga"),
        )
        .await
        .unwrap();
    assert_eq!(disputed, DecisionOutcome::Moved(Status::Disputed));
    seen.push(pinned(&fleet, &op).await);

    // Every status and approval status of the state table was read.
    let statuses: BTreeSet<&str> = seen.iter().map(|v| v.status.as_str()).collect();
    let all: BTreeSet<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(statuses, all);
    let approvals: BTreeSet<&str> = seen.iter().map(|v| v.approval_status.as_str()).collect();
    let all: BTreeSet<&str> = ApprovalStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(approvals, all);
    assert!(seen.iter().any(|v| v.confirmation.is_some()));

    // Every event of the run reads into the type and is written back as it was stored,
    // and the events carried every status.
    let events = outbox(&fleet, None).await;
    let mut carried = BTreeSet::new();
    for (event_type, data, json) in &events {
        assert_eq!(&data.to_json(), json, "a {} event", event_type.as_str());
        if let Some(d) = data.operation() {
            carried.insert(d.view.status.as_str());
        }
    }
    let all: BTreeSet<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(carried, all, "the statuses the events carried");
    fleet.stop().await;
}
