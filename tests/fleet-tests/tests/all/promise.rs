//! The edges of the promise "at most one effect per approved operation, decided only by
//! the provider or a person": a provider that commits after we gave up, a conflict our own
//! late request caused, rows escalated to a person, keys past their retention, and the
//! audit that proves no second effect slipped through.

use fleet_tests::{at, reference};
use std::time::Duration;

use fleet_broker::Queue;
use fleet_core::reconcile::ProviderContract;
use fleet_core::Status;
use fleet_execute::ExecuteSettings;
use fleet_store::TransitionOutcome;
use fleet_tests::{
    contract, deal_create_intent, deal_update_intent, documents, eventually, fast_reconcile,
    free_addr, hash_of, intent, TestFleet,
};
use serde_json::{json, Value};

/// A CRM whose requests may commit up to 4 s after they started, searchable at once.
fn slow_crm() -> ProviderContract {
    ProviderContract {
        max_request_ms: 4_000,
        key_retention_ms: u64::MAX,
        ..contract(300)
    }
}

/// Execute and reconcile against the CRM with a `timeout_ms` client timeout and `crm` as
/// its contract.
fn spawn_crm_workers(fleet: &mut TestFleet, crm: ProviderContract, timeout_ms: u64) {
    let mut providers = fleet.provider_configs();
    let config = providers.provider_mut("crm");
    documents(config, crm);
    config.timeout_ms = timeout_ms;
    fleet.spawn_execute_deps(fleet.execute_deps_with(ExecuteSettings::default(), &providers));
    fleet.spawn_reconcile_deps(fleet.reconcile_deps_with(&providers, fast_reconcile()));
}

#[tokio::test]
async fn deal_creates_the_crm_commits_after_the_client_gave_up_end_with_one_deal_each() {
    let mut fleet = TestFleet::with_prepare().await;
    // Every create commits 2.5 s after it arrived; the client gives up after 1 s.
    fleet.sim_fault(json!({"route": "POST /v1/deals", "kind": "delay", "delay_ms": 2_500, "probability": 1.0})).await;
    spawn_crm_workers(&mut fleet, slow_crm(), 1_000);
    let mut ops = Vec::new();
    for _ in 0..3 {
        ops.push(fleet.submit_and_approve(&deal_create_intent()).await);
    }
    for op in &ops {
        let row = fleet.reaches(op, Status::Succeeded).await;
        assert!(
            row.unknown_since.is_some(),
            "the timeout made it unknown first"
        );
    }
    for op in &ops {
        assert_eq!(
            fleet.sim_effects_of(op, "deals").await,
            json!(1),
            "exactly one deal for {op}"
        );
        assert_eq!(
            fleet.sim_posts_to(op, "/v1/deals").await,
            1,
            "no second create for {op}"
        );
    }
    fleet.stop().await;
}

#[tokio::test]
async fn a_deal_update_refused_because_our_own_late_patch_landed_is_succeeded_not_cancelled() {
    let mut fleet = TestFleet::with_prepare().await;
    let deal = fleet.sim_deal("ext_1").await;
    let deal_id = deal["id"].as_str().unwrap();
    // The first PATCH lands 3 s after it arrived (the client gave up at 2 s); the retry,
    // sent after a lookup wrongly saw no change (the CRM's request bound understated as 0),
    // arrives before that and is answered 412 once the first one landed.
    fleet.sim_fault(json!({"route": "PATCH /v1/deals/{id}", "kind": "delay", "delay_ms": 3_000, "times": 1})).await;
    fleet.sim_fault(json!({"route": "PATCH /v1/deals/{id}", "kind": "delay", "delay_ms": 1_500, "times": 1})).await;
    let understated = ProviderContract {
        max_request_ms: 0,
        key_retention_ms: u64::MAX,
        ..contract(300)
    };
    spawn_crm_workers(&mut fleet, understated, 2_000);

    let op = fleet
        .submit_and_approve(&deal_update_intent(deal_id, 1, json!({"stage": "won"})))
        .await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), Some(deal_id));
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert!(
        attempts.iter().any(|a| a.http_status == Some(412)
            && a.detail.as_deref() == Some("conflict_after_uncertain_attempt")),
        "the retry met our own change: {attempts:?}"
    );
    let current = fleet.sim_get(&format!("/_sim/deals/{deal_id}")).await;
    assert_eq!(
        (current["version"].clone(), current["stage"].clone()),
        (json!(2), json!("won")),
        "one change, ours"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_conflict_with_no_uncertain_attempt_before_it_is_still_a_new_decision() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let deal = fleet.sim_deal("ext_2").await;
    let deal_id = deal["id"].as_str().unwrap();
    // Approved against version 7, but the deal is at version 1: someone else's world.
    let op = fleet
        .submit_and_approve(&deal_update_intent(deal_id, 7, json!({"stage": "won"})))
        .await;
    let row = fleet.reaches(&op, Status::Cancelled).await;
    assert_eq!(
        row.status_reason.map(fleet_core::Reason::as_str),
        Some("version_conflict")
    );
    fleet.stop().await;
}

/// An approved payment whose first attempt was provably never sent (connection refused),
/// so it waits in not_started for another claim with the same key.
async fn payment_waiting_for_a_second_claim(fleet: &mut TestFleet) -> String {
    fleet.spawn_prepare();
    let i = intent();
    let op = fleet.submitted(&i).await;
    fleet.approve_without_ringing(&op, &hash_of(&i)).await;
    op
}

#[tokio::test]
async fn execute_never_sends_on_a_key_past_its_retention_and_escalates_instead() {
    let mut fleet = TestFleet::start().await;
    let op = payment_waiting_for_a_second_claim(&mut fleet).await;
    // The key was first used 25 h ago (a long backlog of releases and redrives).
    fleet.first_attempt_ago(&op, "25 hours").await;
    fleet.spawn_execute();
    fleet.escalated_without_sending(&op).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_payment_whose_approval_outlives_its_key_is_refused_at_prepare() {
    let fleet = TestFleet::with_prepare().await;
    let mut i = intent();
    i["approval_ttl_seconds"] = json!(2 * 86_400);
    fleet.refused_at_intake(&i, "approval_outlives_key").await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_escalated_row_is_never_claimed_executed_or_cancelled_by_a_worker() {
    let mut fleet = TestFleet::start().await;
    let op = payment_waiting_for_a_second_claim(&mut fleet).await;
    let row = fleet.row(&op).await;
    let escalated = fleet
        .escalate(&op, &row, fleet_core::Reason::LookupFailedRepeatedly)
        .await;
    assert!(matches!(escalated, TransitionOutcome::Moved { .. }));
    // The claim itself refuses it, whoever rings.
    let claim = fleet
        .store
        .claim_ready(at(&op), &[], "execute:test", 5_000)
        .await
        .unwrap();
    assert!(matches!(claim, fleet_store::Claim::NotClaimable));
    fleet.spawn_execute();
    fleet.spawn_reconcile(contract(0), fast_reconcile());
    fleet.ring_execute(&op).await;
    fleet.drained(Queue::OperationsExecute).await;
    // Its approval window closes: the sweeper does not cancel what a person holds.
    fleet
        .sql()
        .await
        .execute(
            "UPDATE operations SET approval_expires_at = now() WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = fleet.row(&op).await;
    assert_eq!((after.status, after.fence), (Status::NotStarted, row.fence));
    assert_eq!(fleet.sim_posts(&op).await, 0);
    fleet.stop().await;
}

#[tokio::test]
async fn a_signed_webhook_for_an_escalated_row_is_recorded_and_moves_nothing() {
    let (mut fleet, op) = payment_with_fault(
        json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
    )
    .await;
    let row = fleet.reaches(&op, Status::Unknown).await;
    fleet
        .escalate(&op, &row, fleet_core::Reason::LookupFailedRepeatedly)
        .await;
    let ingest = fleet.spawn_webhook_ingest().await;
    let object = fleet.sim_payment(&op).await;
    ingest
        .deliver(&fleet.http, "evt_escalated_1", "payment.succeeded", &object)
        .await;
    let store = fleet.store.clone();
    let note =
        eventually("the event to be recorded", || {
            let (store, op) = (store.clone(), op.clone());
            async move {
                store.events(at(&op)).await.unwrap().into_iter().find(|e| {
                    e.reason.map(fleet_core::Reason::as_str) == Some("operation_escalated")
                })
            }
        })
        .await;
    assert_eq!(note.actor, "webhook-ingest");
    let after = fleet.row(&op).await;
    assert_eq!(after.status, Status::Unknown, "a person decides");
    fleet.stop().await;
}

/// A fleet with prepare and execute running, and a payment submitted and approved with
/// `fault` set at the provider: (fleet, operation id).
async fn payment_with_fault(fault: Value) -> (TestFleet, String) {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let i = intent();
    let op = submit_and_approve_with_fault(&mut fleet, &i, fault).await;
    (fleet, op)
}

async fn submit_and_approve_with_fault(fleet: &mut TestFleet, i: &Value, fault: Value) -> String {
    let op = fleet.submitted(i).await;
    fleet.sim_fault(fault).await;
    fleet.approve(&op, &hash_of(i)).await.unwrap();
    op
}

#[tokio::test]
async fn escalated_accepted_rows_cannot_starve_the_deadline_sweep_and_are_counted() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute_with(ExecuteSettings {
        accepted_deadline_s: 1,
        ..ExecuteSettings::default()
    });
    // Three payments accepted (pending at the provider), two of them escalated.
    let mut ops = Vec::new();
    for _ in 0..3 {
        let i = intent();
        ops.push(
            submit_and_approve_with_fault(
                &mut fleet,
                &i,
                json!({"route": "POST /v1/payments", "kind": "pending", "times": 1}),
            )
            .await,
        );
        fleet.reaches(ops.last().unwrap(), Status::Accepted).await;
    }
    for op in &ops[..2] {
        let row = fleet.row(op).await;
        fleet
            .sql()
            .await
            .execute(
                "UPDATE operations SET escalated_at = now() WHERE operation_id = $1",
                &[op],
            )
            .await
            .unwrap();
        assert_eq!(row.status, Status::Accepted);
    }
    // A sweep batch of 2 would be filled by the escalated rows forever if they were taken.
    fleet.spawn_reconcile(
        contract(0),
        fleet_reconcile::ReconcileSettings {
            sweep_batch: 2,
            ..fast_reconcile()
        },
    );
    let moved = fleet.reaches(&ops[2], Status::Unknown).await;
    assert_eq!(
        moved.status_reason.map(fleet_core::Reason::as_str),
        Some("deadline_passed")
    );
    for op in &ops[..2] {
        assert_eq!(
            fleet.row(op).await.status,
            Status::Accepted,
            "left to a person"
        );
    }
    let gauges = fleet.store.fleet_gauges().await.unwrap();
    assert_eq!(
        gauges.escalated, 2,
        "escalated rows are counted whatever their status"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_second_payment_found_by_the_post_settlement_audit_escalates_with_both_ids() {
    let (fleet, op) = payment_with_fault(
        json!({"route": "POST /v1/payments", "kind": "drop_after_commit", "times": 1}),
    )
    .await;
    fleet.reaches(&op, Status::Unknown).await;
    // Reconcile audits 2.3 s after settling (the provider's request bound plus its lag).
    let admin = free_addr();
    let mut reconcile = fleet.spawn_process(
        "fleet-reconcile",
        &[
            ("ADMIN_ADDR", &admin),
            ("PAYMENTS_SEARCH_LAG_MS", "300"),
            ("PAYMENTS_MAX_REQUEST_S", "2"),
            ("SWEEP_INTERVAL_MS", "100"),
            ("LOOKUP_RECHECK_MS", "200"),
        ],
    );
    let row = fleet.reaches(&op, Status::Succeeded).await;
    let first = row.external_id.clone().unwrap();
    // The provider makes a second payment for our reference, behind our back.
    let second = fleet
        .sim_create_payment("someone-else", &reference(&op))
        .await;
    let second = second["id"].as_str().unwrap().to_owned();
    let escalated = fleet.escalated(&op).await;
    assert_eq!(
        escalated.status,
        Status::Succeeded,
        "the effect happened; a person handles the duplicate"
    );
    let event = fleet
        .history(&op)
        .await
        .into_iter()
        .find(|e| e.reason.map(fleet_core::Reason::as_str) == Some("duplicate_effect"))
        .expect("audit event");
    let found: Vec<String> =
        serde_json::from_value(event.evidence.unwrap()["found"].clone()).unwrap();
    assert!(
        found.contains(&first) && found.contains(&second),
        "both ids as evidence: {found:?}"
    );
    let metrics = fleet_tests::scrape(&fleet.http, &format!("http://{admin}"))
        .await
        .expect("reconcile's /metrics");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("fleet_duplicate_effects_detected_total{")
                && l.contains("action=\"payment.create\"")
                && l.ends_with(" 1")),
        "the incident is counted"
    );
    reconcile.kill9();
    fleet.stop().await;
}

#[tokio::test]
async fn a_payment_that_succeeded_after_an_uncertain_attempt_with_one_effect_is_audited_clean() {
    let (mut fleet, op) = payment_with_fault(
        json!({"route": "POST /v1/payments", "kind": "drop_after_commit", "times": 1}),
    )
    .await;
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.reaches(&op, Status::Succeeded).await;
    let audited = fleet
        .recorded(&op, fleet_core::history::HistoryKind::Audited)
        .await;
    assert_eq!(
        audited.reason.map(fleet_core::Reason::as_str),
        Some("single_effect")
    );
    assert!(fleet.row(&op).await.escalated_at.is_none());
    fleet.stop().await;
}

#[tokio::test]
async fn a_payload_edited_after_approval_is_escalated_on_the_read_path_too() {
    let mut fleet = TestFleet::start().await;
    let op = payment_waiting_for_a_second_claim(&mut fleet).await;
    // Edited behind the immutability trigger's back.
    let sql = fleet.sql().await;
    sql.batch_execute("ALTER TABLE operations DISABLE TRIGGER operations_snapshot_immutable")
        .await
        .unwrap();
    sql.execute("UPDATE operations SET payload = jsonb_set(payload, '{amount_minor}', '99999999') WHERE operation_id = $1", &[&op]).await.unwrap();
    sql.batch_execute("ALTER TABLE operations ENABLE TRIGGER operations_snapshot_immutable")
        .await
        .unwrap();
    // Make the one-statement claim miss so execute takes the read-and-decide path.
    // (Behind the approval rule's back too: the database refuses such an approved hash.)
    sql.batch_execute(&format!(
        "BEGIN; SET LOCAL session_replication_role = replica;
         UPDATE operations SET approved_hash = 'sha256:' || repeat('0', 64) WHERE operation_id = '{op}';
         COMMIT;"
    ))
    .await
    .unwrap();
    fleet.spawn_execute();
    fleet.ring_execute(&op).await;
    fleet
        .escalated_as(&op, Status::NotStarted, "approved_hash_mismatch")
        .await;
    assert_eq!(fleet.sim_posts(&op).await, 0);
    fleet.stop().await;
}

#[tokio::test]
async fn an_operator_resolves_a_disputed_operation_with_evidence() {
    let (fleet, op) = payment_with_fault(
        json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
    )
    .await;
    fleet.reaches(&op, Status::Unknown).await;
    let dana = fleet_tests::decider("dana");
    fleet
        .store
        .dispute(at(&op), "customer says charged twice", &dana)
        .await
        .unwrap();
    let r = fleet_store::Resolve {
        outcome: fleet_core::Resolution::Succeeded,
        external_id: Some("pay_checked"),
        evidence: "one charge in the provider dashboard",
    };
    fleet.store.resolve(at(&op), r, &dana).await.unwrap();
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.status, row.external_id.as_deref()),
        (Status::Succeeded, Some("pay_checked"))
    );
    let last = fleet.store.events(at(&op)).await.unwrap().pop().unwrap();
    assert_eq!(
        (
            last.from_status.map(fleet_core::Status::as_str),
            last.actor.as_str()
        ),
        (Some("disputed"), "operator:dana")
    );
    fleet.stop().await;
}
