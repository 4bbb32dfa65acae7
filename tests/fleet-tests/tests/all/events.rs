//! Outcome events end to end: real Postgres, RabbitMQ and the provider simulator, the
//! relay in-process or as the real binary, and a queue bound to `fleet.events` the way an
//! agent binds one. Every event is a CloudEvent carrying the operation view and its
//! per-operation sequence; a relay killed between the broker's confirm and its commit,
//! or cut off from the broker, loses nothing.

use fleet_core::events::{tenant_segment, EventApproval};
use fleet_core::{ApprovalStatus, Resolution, Status};
use fleet_reconcile::Reconciler;
use fleet_store::Resolve;
use fleet_tests::{at, reference};
use fleet_tests::{
    contract, eventually, fast_reconcile, fast_relay, hash_of, intent, op_of, BrokerProxy,
    EventTap, TappedEvent, TestFleet,
};
use serde_json::json;

const HAPPY_PATH: [&str; 4] = ["prepared", "approved", "executing", "succeeded"];

/// Each event's short type, in arrival order.
fn types(events: &[TappedEvent]) -> Vec<&str> {
    events.iter().map(TappedEvent::short_type).collect()
}

fn sequences(events: &[TappedEvent]) -> Vec<i64> {
    events.iter().map(TappedEvent::sequence).collect()
}

/// A fleet with prepare and execute running and a queue bound to every event: (fleet, its
/// tap).
async fn tapped_fleet() -> (TestFleet, EventTap) {
    let mut fleet = TestFleet::start().await;
    let tap = fleet.tap_events("#").await;
    fleet.spawn_prepare();
    fleet.spawn_execute();
    (fleet, tap)
}

/// The first copy of each event id, in arrival order (what a deduplicating consumer keeps).
fn first_copies(events: &[TappedEvent]) -> Vec<TappedEvent> {
    let mut seen = std::collections::HashSet::new();
    events
        .iter()
        .filter(|e| seen.insert(e.id().to_owned()))
        .cloned()
        .collect()
}

async fn outbox_drained(fleet: &TestFleet) {
    eventually("the outbox to drain", || async {
        (fleet.outbox_backlog().await == 0).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_payment_publishes_prepared_approved_executing_succeeded_in_order_as_cloudevents() {
    let (mut fleet, tap) = tapped_fleet().await;
    fleet.spawn_relay(fast_relay()).await;
    let i = intent();
    let op = op_of(&i);
    fleet.submit_and_approve(&i).await;
    fleet.reaches(&op, Status::Succeeded).await;
    let events = tap.until_types(&op, &HAPPY_PATH).await;
    outbox_drained(&fleet).await;
    let events = tap
        .of(&op)
        .into_iter()
        .take(events.len().max(4))
        .collect::<Vec<_>>();
    assert_eq!(types(&events), HAPPY_PATH, "in order, once each");
    assert_eq!(sequences(&events), [1, 2, 3, 4]);
    let source = format!("/fleet/{}", fleet.broker.namespace);
    for e in &events {
        let b = &e.body;
        let t = e.short_type();
        assert_eq!(b["specversion"], "1.0");
        assert_eq!(b["id"], format!("{}.{}", reference(&op), e.sequence()));
        assert_eq!(b["source"], source.as_str());
        assert_eq!(b["type"], format!("fleet.operation.{t}"));
        assert_eq!(
            b["subject"],
            format!("{}/{op}", i["tenant_id"].as_str().unwrap()),
            "the subject names the tenant and the operation"
        );
        assert_eq!(b["datacontenttype"], "application/json");
        chrono::DateTime::parse_from_rfc3339(b["time"].as_str().unwrap())
            .expect("time is RFC 3339");
        assert_eq!(
            e.content_type.as_deref(),
            Some("application/cloudevents+json")
        );
        assert_eq!(e.message_id.as_deref(), Some(e.id()));
        assert_eq!(e.amqp_type.as_deref(), b["type"].as_str());
        assert_eq!(e.routing_key, format!("fleet.operation.{t}.org_482"));
        assert_eq!(e.view().operation_id.as_str(), op.as_str());
        assert_eq!(e.view().tenant_id, "org_482");
    }
    // Each event carries the view as the change left it.
    let status = |e: &TappedEvent| (e.view().status, e.view().approval_status);
    let seen: Vec<(Status, ApprovalStatus)> = events.iter().map(status).collect();
    let expected = [
        (Status::NotStarted, ApprovalStatus::Pending),
        (Status::NotStarted, ApprovalStatus::Approved),
        (Status::InProgress, ApprovalStatus::Approved),
        (Status::Succeeded, ApprovalStatus::Approved),
    ];
    assert_eq!(seen, expected);
    assert_eq!(
        events[1].view().decided_by.as_deref(),
        Some("test-approver")
    );
    // The last event is the operation view itself, plus its sequence.
    let mut last = events[3].body["data"].clone();
    assert_eq!(
        last.as_object_mut().unwrap().remove("sequence"),
        Some(json!(4))
    );
    assert_eq!(last, fleet.view_in_db(&op).await);
    fleet.stop().await;
}

#[tokio::test]
async fn a_consumer_binds_by_type_or_by_tenant_and_a_tenant_with_dots_stays_one_word() {
    let mut fleet = TestFleet::start().await;
    let dotted = "acme.kz";
    let succeeded_only = fleet.tap_events("fleet.operation.succeeded.*").await;
    let acme_only = fleet
        .tap_events(&format!("fleet.operation.*.{}", tenant_segment(dotted)))
        .await;
    let everything = fleet.tap_events("#").await;
    fleet.spawn_prepare();
    fleet.spawn_execute();
    fleet.spawn_relay(fast_relay()).await;
    let mut acme = intent();
    acme["tenant_id"] = json!(dotted);
    let other = intent();
    for i in [&acme, &other] {
        fleet.submit_and_approve(i).await;
        fleet.reaches(&op_of(i), Status::Succeeded).await;
    }
    for i in [&acme, &other] {
        everything.until_types(&op_of(i), &HAPPY_PATH).await;
    }
    outbox_drained(&fleet).await;
    let got = succeeded_only.events();
    assert_eq!(
        types(&got),
        ["succeeded", "succeeded"],
        "both tenants, one type"
    );
    let got = acme_only.events();
    assert_eq!(types(&got), HAPPY_PATH, "one tenant, every type");
    assert!(got
        .iter()
        .all(|e| e.subject() == format!("{dotted}/{}", op_of(&acme))));
    assert_eq!(got[0].routing_key, "fleet.operation.prepared.acme%2Ekz");
    assert_eq!(got[0].view().tenant_id, dotted);
    fleet.stop().await;
}

#[tokio::test]
async fn a_rejected_operation_publishes_prepared_then_rejected() {
    let mut fleet = TestFleet::start().await;
    let tap = fleet.tap_events("#").await;
    fleet.spawn_prepare();
    fleet.spawn_relay(fast_relay()).await;
    let i = intent();
    let op = fleet.submitted(&i).await;
    fleet
        .store
        .reject(at(&op), &fleet_tests::decider("bob"), "wrong beneficiary")
        .await
        .unwrap();
    let events = tap.until_types(&op, &["prepared", "rejected"]).await;
    assert_eq!(types(&events), ["prepared", "rejected"]);
    assert_eq!(sequences(&events), [1, 2]);
    let data = events[1].view();
    assert_eq!(
        (data.status, data.approval_status, data.reason.as_deref()),
        (
            Status::Cancelled,
            ApprovalStatus::Rejected,
            Some("approval_rejected")
        )
    );
    assert_eq!(data.decided_by.as_deref(), Some("bob"));
    fleet.stop().await;
}

#[tokio::test]
async fn an_unknown_payment_escalated_by_reconcile_and_resolved_by_an_operator_publishes_each_step()
{
    let (mut fleet, tap) = tapped_fleet().await;
    fleet.spawn_relay(fast_relay()).await;
    let i = intent();
    let op = op_of(&i);
    // The provider commits the payment and drops the answer: unknown.
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "drop_after_commit"}))
        .await;
    fleet.submit_and_approve(&i).await;
    fleet.reaches(&op, Status::Unknown).await;
    // Someone else created a second payment with our reference: reconcile cannot choose.
    fleet.sim_foreign_payment(&op).await;
    // Reconciled by direct calls, so that no sweeper touches the row while the operator
    // decides (a concurrent lookup record makes the decision stale, by design).
    let reconciler = Reconciler::new(&fleet.reconcile_deps(contract(300), fast_reconcile()));
    eventually("reconcile to escalate", || async {
        reconciler.reconcile(at(&op)).await.unwrap();
        fleet
            .store
            .get(at(&op))
            .await
            .unwrap()
            .filter(|r| r.escalated_at.is_some())
    })
    .await;
    tap.until_types(&op, &["escalated"]).await;
    let r = Resolve {
        outcome: Resolution::Failed,
        external_id: None,
        evidence: "both refunded by the provider",
    };
    fleet
        .store
        .resolve(at(&op), r, &fleet_tests::decider("dana"))
        .await
        .unwrap();
    let events = tap.until_types(&op, &["resolved"]).await;
    assert_eq!(
        types(&events),
        [
            "prepared",
            "approved",
            "executing",
            "unknown",
            "escalated",
            "resolved"
        ]
    );
    assert_eq!(sequences(&events), [1, 2, 3, 4, 5, 6]);
    let (unknown, escalated, resolved) = (events[3].view(), events[4].view(), events[5].view());
    assert_eq!(
        (unknown.status, unknown.escalated),
        (Status::Unknown, false)
    );
    assert_eq!(
        (escalated.status, escalated.escalated),
        (Status::Unknown, true)
    );
    assert_eq!(escalated.reason.as_deref(), Some("multiple_matches"));
    assert_eq!(
        (resolved.status, resolved.reason.as_deref()),
        (Status::Failed, Some("operator_resolution"))
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_relay_killed_between_the_confirm_and_its_commit_loses_nothing_and_repeats_the_same_id() {
    let (fleet, tap) = tapped_fleet().await;
    let poll = ("RELAY_POLL_INTERVAL_MS", "25");
    let mut doomed =
        fleet.spawn_process("fleet-relay", &[poll, ("FLEET_PAUSE_AT", "after_publish")]);
    let i = intent();
    let op = fleet.submitted(&i).await;
    // The broker confirmed `prepared` (the tap has it); the relay stopped before its commit.
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    tap.until_types(&op, &["prepared"]).await;
    assert!(fleet.approve(&op, &hash_of(&i)).await.unwrap());
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(
        fleet.outbox_backlog().await,
        4,
        "nothing was marked published"
    );
    doomed.kill9();
    let _healthy = fleet.spawn_process("fleet-relay", &[poll]);
    let events = tap.until_types(&op, &HAPPY_PATH).await;
    outbox_drained(&fleet).await;
    let events = tap
        .of(&op)
        .into_iter()
        .take(events.len().max(5))
        .collect::<Vec<_>>();
    assert_eq!(
        types(&events),
        ["prepared", "prepared", "approved", "executing", "succeeded"],
        "prepared again, then the rest in order"
    );
    assert_eq!(
        events[0].body, events[1].body,
        "the repeat is the same event: same id, same content"
    );
    let kept = first_copies(&events);
    assert_eq!(sequences(&kept), [1, 2, 3, 4]);
    assert_eq!(
        kept.iter().map(|e| e.id().to_owned()).collect::<Vec<_>>(),
        (1..=4)
            .map(|n| format!("{}.{n}", reference(&op)))
            .collect::<Vec<_>>()
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_broker_outage_under_the_relay_loses_nothing_and_keeps_the_order() {
    let (fleet, tap) = tapped_fleet().await;
    let proxy = BrokerProxy::start(&fleet.broker).await;
    proxy.set_up(true);
    let through_proxy = proxy.broker_config(&fleet.broker).amqp_url;
    let relay = fleet.spawn_process(
        "fleet-relay",
        &[
            ("AMQP_URL", &through_proxy),
            ("RELAY_POLL_INTERVAL_MS", "25"),
        ],
    );
    let i = intent();
    let op = fleet.submitted(&i).await;
    tap.until_types(&op, &["prepared"]).await;
    // The relay's broker connection drops and no new one gets through.
    proxy.cut();
    assert!(fleet.approve(&op, &hash_of(&i)).await.unwrap());
    fleet.reaches(&op, Status::Succeeded).await;
    relay
        .wait_for_log("events not confirmed by the broker")
        .await;
    assert_eq!(
        fleet.outbox_backlog().await,
        3,
        "approved, executing, succeeded wait in the outbox"
    );
    assert_eq!(types(&tap.of(&op)), ["prepared"]);
    proxy.set_up(true);
    tap.until_types(&op, &HAPPY_PATH).await;
    outbox_drained(&fleet).await;
    let kept = first_copies(&tap.of(&op));
    assert_eq!(types(&kept), HAPPY_PATH);
    assert_eq!(sequences(&kept), [1, 2, 3, 4]);
    drop(relay);
    fleet.stop().await;
}

#[tokio::test]
async fn each_approval_short_of_the_quorum_publishes_approval_recorded_with_who_and_how_many() {
    let mut fleet = TestFleet::start().await;
    let tap = fleet.tap_events("#").await;
    fleet.spawn_relay(fast_relay()).await;
    // An operation that needs two approvers, stored as intake stores it.
    let i = intent();
    let op = fleet.stored_with_quorum(&i, 2, Some("billing-bot")).await;
    for approver in ["ann", "ben"] {
        fleet
            .store
            .approve(at(&op), &hash_of(&i), &fleet_tests::decider(approver), None)
            .await
            .unwrap();
    }
    let events = tap
        .until_types(&op, &["prepared", "approval_recorded", "approved"])
        .await;
    assert_eq!(
        types(&events),
        ["prepared", "approval_recorded", "approved"]
    );
    assert_eq!(sequences(&events), [1, 2, 3]);
    // What a bot needs to tell the next approver "1 of 2, waiting for you".
    let first = events[1].data();
    assert_eq!(
        (
            first.view.approvals_received,
            first.view.approvals_required,
            first.view.approval_status,
            first.view.submitted_by.as_deref(),
        ),
        (1, 2, ApprovalStatus::Pending, Some("billing-bot"))
    );
    assert_eq!(
        first.approval,
        Some(EventApproval {
            by: "ann".into(),
            signed: false,
            signed_in_with: Some("token".into()),
        })
    );
    assert_eq!(
        events[1].body["data"]["approval"],
        json!({"by": "ann", "signed": false, "signed_in_with": "token"})
    );
    let second = events[2].data();
    assert_eq!(
        (
            second.view.approvals_received,
            second.approval.as_ref().map(|a| a.by.as_str())
        ),
        (2, Some("ben"))
    );
    fleet.stop().await;
}
