//! `refund.create` with `PAYMENTS_PROVIDER=stripe`, through the real `fleet-execute` and
//! `fleet-reconcile` processes, against localstripe behind the harness's fault-injecting
//! proxy. localstripe ignores `Idempotency-Key`, so the fleet runs with a key retention of
//! 0: a second request on an operation's key would show as a second refund. Each test
//! ends with the promise: the operation's refunds in localstripe (those whose
//! `metadata[fleet_operation]` is its key) are at most one, and the fleet's final state is
//! that refund's status (or, when there is none, a person's decision).

use std::time::Duration;

use fleet_core::Status;
use fleet_tests::stripe_fleet::LocalstripeFleet;
use fleet_tests::{refund_intent, Fault};
use serde_json::Value;

/// A refund of `amount_minor` of a fresh PaymentIntent of 5000, approved: the operation
/// and the PaymentIntent.
async fn approved_refund(s: &LocalstripeFleet, amount_minor: i64) -> (String, String) {
    let intent = s.stripe.paid_intent(5_000, "kzt").await;
    let op = s
        .fleet
        .submit_and_approve(&refund_intent(&intent, amount_minor))
        .await;
    (op, intent)
}

/// The promise: one create was sent, under the operation's key, and localstripe holds
/// `refunds` refunds carrying the key; the refund (when one).
async fn sent_once(s: &LocalstripeFleet, op: &str, intent: &str, refunds: usize) -> Option<Value> {
    let key = s.fleet.key_of(op).await;
    let creates = s.proxy.creates();
    assert_eq!(creates.len(), 1, "one create, never a second: {creates:?}");
    assert_eq!(creates[0].idempotency_key.as_deref(), Some(key.as_str()));
    let carrying = s.stripe.refunds_carrying(intent, &key).await;
    assert_eq!(carrying.len(), refunds, "{carrying:?}");
    carrying.into_iter().next()
}

#[tokio::test]
async fn a_refund_is_one_form_post_and_ends_as_the_refund_it_made() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    let (op, intent) = approved_refund(&s, 1_250).await;
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let refund = sent_once(&s, &op, &intent, 1).await.unwrap();
    assert_eq!(refund["status"], "succeeded");
    assert_eq!(refund["amount"], 1_250);
    assert_eq!(row.external_id.as_deref(), refund["id"].as_str());
    assert!(refund["id"].as_str().unwrap().starts_with("re_"));
    assert_eq!(refund["metadata"]["fleet_tenant"], fleet_tests::TENANT);
    let body = &s.proxy.creates()[0].body;
    assert!(body.contains(&format!("payment_intent={intent}")), "{body}");
    assert!(body.contains("amount=1250"), "{body}");
    s.stop().await;
}

#[tokio::test]
async fn an_answer_lost_after_stripe_refunded_is_found_by_its_metadata_never_sent_again() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    let (op, intent) = approved_refund(&s, 700).await;
    s.proxy.arm(Fault::DropAnswer);
    let _execute = s.spawn("fleet-execute");
    s.fleet.reaches(&op, Status::Unknown).await;
    let _reconcile = s.spawn("fleet-reconcile");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let refund = sent_once(&s, &op, &intent, 1).await.unwrap();
    assert_eq!(row.external_id.as_deref(), refund["id"].as_str());
    assert_eq!(row.fence, 1, "never claimed again");
    // Found by paging the PaymentIntent's refunds.
    assert!(s
        .proxy
        .seen()
        .iter()
        .any(|r| r.method == "GET" && r.path == "/v1/refunds" && r.idempotency_key.is_none()));
    s.stop().await;
}

#[tokio::test]
async fn an_answer_held_past_the_timeout_is_found_by_lookup() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    let (op, intent) = approved_refund(&s, 900).await;
    s.proxy.arm(Fault::HoldAnswer(Duration::from_secs(4)));
    let _execute = s.spawn("fleet-execute");
    let _reconcile = s.spawn("fleet-reconcile");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let refund = sent_once(&s, &op, &intent, 1).await.unwrap();
    assert_eq!(row.external_id.as_deref(), refund["id"].as_str());
    let first = s.fleet.first_attempt_finished(&op).await;
    assert_eq!(first.outcome.map(|o| o.as_str()), Some("unknown"));
    s.stop().await;
}

#[tokio::test]
async fn execute_killed_while_stripe_holds_the_answer_is_settled_by_lookup_with_one_refund() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    let (op, intent) = approved_refund(&s, 1_000).await;
    s.proxy.arm(Fault::HoldAnswer(Duration::from_secs(30)));
    let mut doomed = s.spawn("fleet-execute");
    fleet_tests::eventually("the create to reach localstripe", || async {
        (s.stripe.refunds_of(&intent).await.len() == 1).then_some(())
    })
    .await;
    doomed.kill9();
    assert_eq!(s.fleet.row(&op).await.status, Status::InProgress);
    let _reconcile = s.spawn("fleet-reconcile");
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let refund = sent_once(&s, &op, &intent, 1).await.unwrap();
    assert_eq!(refund["status"], "succeeded");
    assert_eq!(row.external_id.as_deref(), refund["id"].as_str());
    assert_eq!(row.fence, 1, "never claimed again");
    s.stop().await;
}

#[tokio::test]
async fn a_5xx_before_stripe_saw_it_makes_no_refund_and_no_blind_retry() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    let (op, intent) = approved_refund(&s, 300).await;
    s.proxy.arm(Fault::BadGatewayBeforeForwarding);
    let _execute = s.spawn("fleet-execute");
    let _reconcile = s.spawn("fleet-reconcile");
    // Nothing found, and Stripe's double keeps no key: a person decides, nothing is resent.
    let row = s
        .fleet
        .escalated_as(&op, Status::Unknown, "key_retention_passed")
        .await;
    assert_eq!(row.fence, 1, "never claimed again");
    assert_eq!(sent_once(&s, &op, &intent, 0).await, None);
    s.stop().await;
}

#[tokio::test]
async fn a_rate_limited_refund_waits_and_goes_again_on_its_key_never_a_refusal() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    let (op, intent) = approved_refund(&s, 600).await;
    s.proxy.arm(Fault::RateLimitedBeforeForwarding);
    // A lease long enough to wait out the second Stripe asks for within the claim.
    let _execute = s
        .fleet
        .spawn_process("fleet-execute", &s.settings(&[("LEASE_TTL_MS", "6000")]));
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.fence, 1, "the claim waited, never released");
    // The 429 was refused in front of Stripe: the same request went once more.
    let key = s.fleet.key_of(&op).await;
    let creates = s.proxy.creates();
    assert_eq!(creates.len(), 2, "{creates:?}");
    assert!(creates
        .iter()
        .all(|c| c.idempotency_key.as_deref() == Some(key.as_str()) && c.body == creates[0].body));
    let refunds = s.stripe.refunds_carrying(&intent, &key).await;
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(row.external_id.as_deref(), refunds[0]["id"].as_str());
    s.stop().await;
}

#[tokio::test]
async fn a_refund_stripe_refuses_ends_failed_with_its_error() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    // A PaymentIntent that was never paid: localstripe refuses to refund it (400).
    let intent = s.stripe.unpaid_intent(5_000, "kzt").await;
    let op = s
        .fleet
        .submit_and_approve(&refund_intent(&intent, 100))
        .await;
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&op, Status::Failed).await;
    // localstripe's errors carry no `code`: the error's type is the failure.
    assert_eq!(row.error_code.as_deref(), Some("invalid_request_error"));
    assert_eq!(row.fence, 1);
    assert_eq!(s.proxy.creates().len(), 1);
    // (localstripe cannot list the refunds of a PaymentIntent without a charge.)
    assert_eq!(s.stripe.all_refunds().await, Vec::<Value>::new());
    s.stop().await;
}

#[tokio::test]
async fn an_over_refund_ends_failed_with_stripes_code_and_the_first_refund_stands() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    s.proxy.refuse_over_refunds();
    let (first, intent) = approved_refund(&s, 4_000).await;
    let _execute = s.spawn("fleet-execute");
    s.fleet.reaches(&first, Status::Succeeded).await;
    // 1000 of the 5000 are left: 1500 more is an over-refund.
    let over = s
        .fleet
        .submit_and_approve(&refund_intent(&intent, 1_500))
        .await;
    let row = s.fleet.reaches(&over, Status::Failed).await;
    assert_eq!(row.error_code.as_deref(), Some("amount_too_large"));
    assert_eq!(row.fence, 1);
    let key = s.fleet.key_of(&over).await;
    assert!(s.stripe.refunds_carrying(&intent, &key).await.is_empty());
    let refunds = s.stripe.refunds_of(&intent).await;
    assert_eq!(refunds.len(), 1, "only the first refund: {refunds:?}");
    assert_eq!(refunds[0]["amount"], 4_000);
    s.stop().await;
}

#[tokio::test]
async fn a_worker_without_a_stripe_key_stops_at_start_naming_the_setting() {
    let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
    let mut bad = s.fleet.spawn_process(
        "fleet-execute",
        &s.settings(&[("PAYMENTS_API_KEY", "pk_test_public")]),
    );
    bad.refuses_to_start("PAYMENTS_API_KEY is not a Stripe API key", "pk_test_public")
        .await;
    s.stop().await;
}
