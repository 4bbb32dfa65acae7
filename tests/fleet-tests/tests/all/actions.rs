//! The rest of the action catalogue: refunds under the payments API's idempotency rules,
//! CRM deal creates made safe by searching before every create, and deal updates made
//! safe by the approved version (a conflict is a new decision, never a retry).

use fleet_broker::Queue;
use fleet_core::Status;
use fleet_execute::ExecuteSettings;
use fleet_provider_sim::SimConfig;
use fleet_providers::Capabilities;
use fleet_tests::at;
use fleet_tests::{
    contract, deal_create_intent, deal_update_intent, documents, fast_reconcile, hash_of, intent,
    op_of, refund_intent, TestFleet,
};
use serde_json::{json, Value};

/// A fleet with prepare running and a payment the provider holds, for refunds to refer
/// to: (fleet, payment id).
async fn paid() -> (TestFleet, String) {
    let fleet = TestFleet::with_prepare().await;
    let payment = fleet
        .sim_create_payment("seed-payment", "seed-payment")
        .await;
    (fleet, payment["id"].as_str().unwrap().to_owned())
}

/// A fleet with prepare running whose CRM queues each create for `delay_ms` before the
/// deal exists.
async fn queued_crm_fleet(delay_ms: u64) -> TestFleet {
    let mut fleet = TestFleet::start_with_sim(SimConfig {
        crm_async_create: true,
        crm_async_delay_ms: delay_ms,
        ..Default::default()
    })
    .await;
    fleet.spawn_prepare();
    fleet
}

/// A deal create submitted and approved, with execute running, where the CRM already
/// holds `existing` deals with its external id: (fleet, operation id, those deals).
async fn deal_create_over(existing: usize) -> (TestFleet, String, Vec<Value>) {
    let mut fleet = TestFleet::with_prepare().await;
    let i = deal_create_intent();
    let op = op_of(&i);
    let mut deals = Vec::new();
    for _ in 0..existing {
        deals.push(fleet.sim_deal(&op).await);
    }
    fleet.spawn_execute();
    fleet.submit_and_approve(&i).await;
    (fleet, op, deals)
}

/// The deal create succeeds with a CRM deal's id, one POST and one deal in the CRM.
async fn one_deal_created(fleet: &TestFleet, op: &str) {
    let row = fleet.reaches(op, Status::Succeeded).await;
    assert!(
        row.external_id
            .as_deref()
            .is_some_and(|id| id.starts_with("deal_")),
        "{:?}",
        row.external_id
    );
    assert_eq!(
        fleet.sim_posts_to(op, "/v1/deals").await,
        1,
        "no second POST"
    );
    assert_eq!(
        fleet.sim_effects_of(op, "deals").await,
        json!(1),
        "exactly one deal"
    );
}

#[tokio::test]
async fn a_refund_is_created_once() {
    let (mut fleet, payment) = paid().await;
    fleet.spawn_execute();
    let op = fleet
        .submit_and_approve(&refund_intent(&payment, 500_000))
        .await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert!(row
        .external_id
        .as_deref()
        .is_some_and(|id| id.starts_with("re_")));
    assert_eq!(fleet.sim_effects_of(&op, "refunds").await, json!(1));
    fleet.stop().await;
}

#[tokio::test]
async fn a_refund_whose_worker_crashed_after_the_provider_committed_is_one_refund() {
    let (mut fleet, payment) = paid().await;
    let mut doomed = fleet.spawn_process(
        "fleet-execute",
        &[
            ("LEASE_TTL_MS", "1500"),
            ("FLEET_PAUSE_AT", "after_provider_response"),
        ],
    );
    let op = fleet
        .submit_and_approve(&refund_intent(&payment, 250_000))
        .await;
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    doomed.kill9();
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_effects_of(&op, "refunds").await, json!(1));
    assert_eq!(fleet.sim_posts_to(&op, "/v1/refunds").await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_deal_create_crashed_after_the_crm_created_it_is_found_by_external_id_with_no_second_post(
) {
    let mut fleet = TestFleet::with_prepare().await;
    let mut doomed = fleet.spawn_process(
        "fleet-execute",
        &[
            ("LEASE_TTL_MS", "1500"),
            ("CRM_SEARCH_LAG_MS", "300"),
            ("FLEET_PAUSE_AT", "after_provider_response"),
        ],
    );
    let op = fleet.submit_and_approve(&deal_create_intent()).await;
    doomed.wait_for_log("FLEET_PAUSE_AT reached").await;
    doomed.kill9();
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.spawn_execute();
    one_deal_created(&fleet, &op).await;
    fleet.stop().await;
}

#[tokio::test]
async fn every_claim_searches_before_creating_and_takes_a_deal_that_already_exists() {
    // The CRM already holds our deal (say, from an attempt whose record was lost).
    let (fleet, op, existing) = deal_create_over(1).await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(
        row.external_id.as_ref(),
        existing[0]["id"].as_str().map(str::to_owned).as_ref()
    );
    assert_eq!(
        fleet.sim_posts_to(&op, "/v1/deals").await,
        0,
        "no POST at all"
    );
    assert_eq!(fleet.sim_effects_of(&op, "deals").await, json!(1));
    fleet.stop().await;
}

#[tokio::test]
async fn two_deals_with_our_external_id_are_a_data_incident_nothing_created_nothing_picked() {
    let (fleet, op, _) = deal_create_over(2).await;
    let row = fleet
        .escalated_as(&op, Status::Unknown, "multiple_matches")
        .await;
    assert_eq!(row.external_id, None, "nothing picked");
    assert_eq!(
        fleet.sim_posts_to(&op, "/v1/deals").await,
        0,
        "nothing created"
    );
    assert_eq!(fleet.sim_effects_of(&op, "deals").await, json!(2));
    fleet.stop().await;
}

#[tokio::test]
async fn an_asynchronous_create_materialises_later_and_no_second_deal_is_created_meanwhile() {
    // The CRM queues the create for 1 s; its documented search lag (2 s) covers that.
    let mut fleet = queued_crm_fleet(1_000).await;
    let mut providers = fleet.provider_configs();
    documents(providers.provider_mut("crm"), contract(2_000));
    fleet.spawn_execute_deps(fleet.execute_deps_with(
        ExecuteSettings {
            accepted_deadline_s: 1,
            ..ExecuteSettings::default()
        },
        &providers,
    ));
    fleet.spawn_reconcile(contract(2_000), fast_reconcile());
    let op = fleet.submit_and_approve(&deal_create_intent()).await;
    let accepted = fleet.reaches(&op, Status::Accepted).await;
    assert_eq!(accepted.external_id, None, "queued: no id yet");
    one_deal_created(&fleet, &op).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_stale_update_is_cancelled_as_a_version_conflict_and_a_superseding_intent_succeeds() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let deal = fleet.sim_deal("acct_9_renewal").await;
    let deal_id = deal["id"].as_str().unwrap().to_owned();
    // Someone edits the deal after the agent read version 1.
    let r = fleet
        .http
        .patch(format!("{}/_sim/deals/{deal_id}", fleet.sim.base_url))
        .json(&json!({"owner_id": "u_8"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let stale = deal_update_intent(&deal_id, 1, json!({"stage": "won"}));
    let old = fleet.submit_and_approve(&stale).await;
    let row = fleet.reaches(&old, Status::Cancelled).await;
    assert_eq!(
        (
            row.status_reason.map(fleet_core::Reason::as_str),
            row.error_code.as_deref()
        ),
        (Some("version_conflict"), Some("version_conflict"))
    );
    let now = fleet.sim_get(&format!("/_sim/deals/{deal_id}")).await;
    assert_eq!(
        (now["version"].clone(), now["stage"].clone()),
        (json!(2), json!("proposal")),
        "the deal is untouched"
    );
    let patches = fleet.sim_requests(Some(&deal_id)).await;
    assert_eq!(patches.len(), 1, "zero retries");
    assert!(
        row.result
            .is_some_and(|r| r.to_string().contains("current_version")),
        "the current version is recorded"
    );

    // A person approves the corrected intent, made against version 2.
    let mut fresh = deal_update_intent(&deal_id, 2, json!({"stage": "won"}));
    fresh["supersedes"] = json!(old);
    let new = fleet.submit_and_approve(&fresh).await;
    fleet.reaches(&new, Status::Succeeded).await;
    assert_eq!(
        fleet.row(&new).await.supersedes.as_deref(),
        Some(old.as_str())
    );
    let now = fleet.sim_get(&format!("/_sim/deals/{deal_id}")).await;
    assert_eq!(
        (now["version"].clone(), now["stage"].clone()),
        (json!(3), json!("won"))
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_superseded_operation_that_never_ran_is_cancelled_and_one_that_ran_cannot_be_superseded()
{
    let mut fleet = TestFleet::with_prepare().await;
    let first = intent();
    let first_op = fleet.submitted(&first).await;
    let mut correction = fleet_tests::with_amount(intent(), json!(1_300_000));
    correction["supersedes"] = json!(first_op);
    fleet.submitted(&correction).await;
    let old = fleet.row(&first_op).await;
    assert_eq!(
        (
            old.status,
            old.status_reason.map(fleet_core::Reason::as_str)
        ),
        (Status::Cancelled, Some("superseded"))
    );
    // An executed operation cannot be superseded: the correction is refused.
    fleet.spawn_execute();
    let done = fleet.submit_and_approve(&intent()).await;
    fleet.reaches(&done, Status::Succeeded).await;
    let mut late = intent();
    late["supersedes"] = json!(done);
    fleet.refused_at_intake(&late, "supersedes_executed").await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_intent_for_a_provider_without_idempotency_and_without_lookup_is_refused_at_prepare() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare_with(
        fleet
            .provider_configs()
            .capabilities()
            .with("crm", Capabilities::NONE),
    );
    let i = deal_create_intent();
    fleet
        .refused_at_intake(&i, "provider_cannot_execute_safely")
        .await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_queued_create_slower_than_the_documented_lag_is_waited_for_never_created_twice() {
    // The CRM queues the create for 3 s but documents a 300 ms search lag: the accepted
    // attempt alone must keep reconcile from ever concluding absence.
    let mut fleet = queued_crm_fleet(3_000).await;
    fleet.spawn_execute_deps(fleet.execute_deps(ExecuteSettings {
        accepted_deadline_s: 1,
        ..ExecuteSettings::default()
    }));
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    let op = fleet.submit_and_approve(&deal_create_intent()).await;
    one_deal_created(&fleet, &op).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_operation_that_was_ever_claimed_cannot_be_superseded() {
    let fleet = TestFleet::with_prepare().await;
    let first = intent();
    let op = fleet.submitted(&first).await;
    fleet.approve_without_ringing(&op, &hash_of(&first)).await;
    // Claimed once, then released as provably not sent: back to not_started, fence 1.
    let fleet_store::Claim::Claimed(claimed) =
        fleet.store.claim(at(&op), 0, "test", 30_000).await.unwrap()
    else {
        panic!("claimable")
    };
    let release = fleet_store::Transition::new(
        at(&op),
        fleet_core::Status::InProgress,
        claimed.fence,
        fleet_core::Event::ProviderNotSent,
        "test",
    );
    fleet.store.transition(release, None).await.unwrap();
    let mut correction = fleet_tests::with_amount(intent(), json!(1_300_000));
    correction["supersedes"] = json!(op);
    fleet.submit(&correction).await;
    let dead = fleet.expect_dead_letters(Queue::IntentsPrepare, 1).await;
    assert_eq!(dead[0].1.as_deref(), Some("supersedes_executed"));
    assert_eq!(
        fleet.row(&op).await.status,
        Status::NotStarted,
        "the old operation keeps its key and its chance"
    );
    fleet.stop().await;
}
