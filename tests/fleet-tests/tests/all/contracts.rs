//! `contract.send` end to end: an envelope created once under a key the e-signature
//! provider keeps for one hour, accepted, then settled by the provider's signed
//! `envelope.sent` / `envelope.delivery_failed` webhook through webhook-ingest, or past
//! its deadline by a lookup by `external_ref`. Past the key's hour nothing is sent on
//! the key again: only a lookup or a person decides.

use fleet_tests::at;
use std::time::Duration;

use fleet_core::Status;
use fleet_execute::ExecuteSettings;
use fleet_provider_sim::SimConfig;
use fleet_tests::{contract, contract_intent, fast_reconcile, hash_of, TestFleet};
use serde_json::json;

/// Prepare, execute, and webhook-ingest hearing the simulator's events on each
/// provider's path. The provider sends an envelope a second after creating it.
async fn with_webhooks() -> TestFleet {
    let mut fleet = TestFleet::start_with_sim(SimConfig {
        esign_send_delay_ms: 1_000,
        ..SimConfig::default()
    })
    .await;
    let ingest = fleet.spawn_webhook_ingest().await;
    fleet
        .sim_webhooks(&ingest.url_per_provider(), json!({}))
        .await;
    fleet.spawn_prepare();
    fleet.spawn_execute();
    fleet
}

#[tokio::test]
async fn a_contract_is_sent_once_and_settled_by_the_providers_signed_webhook() {
    let fleet = with_webhooks().await;
    let i = contract_intent("cust_1042");
    let op = fleet.submit_and_approve(&i).await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    let envelope = row.external_id.clone().expect("the envelope is the effect");
    assert!(envelope.starts_with("env_"), "{envelope}");
    let history = fleet.store.events(at(&op)).await.unwrap();
    assert!(
        history
            .iter()
            .any(|e| e.to_status == Some(fleet_core::Status::Accepted)),
        "accepted first, sent later"
    );
    let settled = history
        .iter()
        .find(|e| e.to_status == Some(fleet_core::Status::Succeeded))
        .unwrap();
    assert_eq!(
        (
            settled.actor.as_str(),
            settled.reason.map(fleet_core::Reason::as_str)
        ),
        ("webhook-ingest", Some("webhook"))
    );
    assert_eq!(fleet.sim_effects(&op).await, 1);
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(
        fleet_core::wording::describe(row.action, None, &row.payload),
        "Send contract template tpl_msa_v3 to recipient cust_1042"
    );
    // The recipient's contact data the provider echoes is never kept.
    let kept = format!(
        "{:?} {:?}",
        row.result,
        fleet.store.attempts(at(&op)).await.unwrap()
    );
    assert!(!kept.contains("@customer.example"), "{kept}");
    fleet.stop().await;
}

#[tokio::test]
async fn a_delivery_failure_reported_by_the_provider_fails_the_contract_with_its_code() {
    let fleet = with_webhooks().await;
    let op = fleet.submit_and_approve(&contract_intent("bounce_7")).await;
    let row = fleet.reaches(&op, Status::Failed).await;
    assert_eq!(row.error_code.as_deref(), Some("recipient_unreachable"));
    assert!(row
        .external_id
        .as_deref()
        .is_some_and(|id| id.starts_with("env_")));
    fleet.stop().await;
}

#[tokio::test]
async fn without_a_webhook_an_accepted_contract_past_its_deadline_is_settled_by_a_lookup() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute_with(ExecuteSettings {
        accepted_deadline_s: 1,
        ..ExecuteSettings::default()
    });
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    let op = fleet
        .submit_and_approve(&contract_intent("cust_1042"))
        .await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(
        fleet
            .recorded(&op, fleet_core::history::HistoryKind::Lookup)
            .await
            .evidence
            .unwrap()["found"],
        json!([row.external_id.unwrap()])
    );
    assert_eq!(fleet.sim_posts(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_contract_whose_approval_outlives_the_keys_hour_is_refused_at_prepare() {
    let fleet = TestFleet::with_prepare().await;
    let mut i = contract_intent("cust_1042");
    i["approval_ttl_seconds"] = json!(3_600);
    fleet.refused_at_intake(&i, "approval_outlives_key").await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_unknown_contract_whose_key_may_have_expired_is_escalated_never_sent_again() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet
        .sim_fault(json!({"route": "POST /v1/envelopes", "kind": "drop_before_commit"}))
        .await;
    fleet.spawn_execute();
    let op = fleet
        .submit_and_approve(&contract_intent("cust_1042"))
        .await;
    fleet.reaches(&op, Status::Unknown).await;
    // A provider that keeps keys one minute: every attempt is within the safety margin of
    // the end of retention, so a retry could send a second contract.
    let mut providers = fleet.provider_configs();
    providers
        .provider_mut("esign")
        .capabilities
        .idempotent_create = Some(Duration::from_secs(60));
    fleet.spawn_reconcile_deps(fleet.reconcile_deps_with(&providers, fast_reconcile()));
    fleet.escalated_past_key_retention(&op).await;
    fleet.stop().await;
}

#[tokio::test]
async fn execute_never_sends_a_contract_on_a_key_past_its_hour() {
    let mut fleet = TestFleet::with_prepare().await;
    let i = contract_intent("cust_1042");
    let op = fleet.submitted(&i).await;
    fleet.approve_without_ringing(&op, &hash_of(&i)).await;
    // The key was first used 61 minutes ago (its release and redrive took that long).
    fleet.first_attempt_ago(&op, "61 minutes").await;
    fleet.spawn_execute();
    fleet.escalated_without_sending(&op).await;
    fleet.stop().await;
}
