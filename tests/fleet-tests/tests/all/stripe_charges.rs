//! `charge.create` with `PAYMENTS_PROVIDER=stripe`, through the real `fleet-execute` and
//! `fleet-reconcile` processes (prepare in-process, reading Stripe at the same proxy),
//! against localstripe behind the harness's fault-injecting proxy. localstripe ignores
//! `Idempotency-Key`, so the fleet runs with a key retention of 0: a second request on an
//! operation's key would show as a second PaymentIntent. Each test ends with the promise:
//! the PaymentIntents carrying the operation's key (`metadata[fleet_operation]`) are at
//! most one, and the fleet's final state is that PaymentIntent's (or a decision of its own
//! made without a request).

use fleet_core::Status;
use fleet_tests::stripe_events::{stripe_event, StripeReceiver};
use fleet_tests::stripe_fleet::LocalstripeFleet;
use fleet_tests::{charge_intent, refund_intent, Fault, TestFleet};
use serde_json::Value;

/// A card that pays.
const VISA: &str = "4242424242424242";
/// A card localstripe saves but declines when it is charged (`card_declined`).
const DECLINED_WHEN_CHARGED: &str = "4000000000000341";

/// The promise: `creates` creates were sent, every one under the operation's key, and
/// `intents` PaymentIntents carry the key; the one (when there is one).
async fn charged(s: &LocalstripeFleet, op: &str, creates: usize, intents: usize) -> Option<Value> {
    let key = s.fleet.key_of(op).await;
    let sent = s.proxy.creates();
    assert_eq!(sent.len(), creates, "{sent:?}");
    assert!(sent
        .iter()
        .all(|c| c.idempotency_key.as_deref() == Some(key.as_str())));
    let carrying = s.stripe.payment_intents_carrying(&key).await;
    assert_eq!(carrying.len(), intents, "{carrying:?}");
    carrying.into_iter().next()
}

#[tokio::test]
async fn a_charge_is_one_confirmed_payment_intent_carrying_its_key() {
    let s = LocalstripeFleet::start().await;
    let (customer, pm) = s.stripe.customer_with_card(VISA).await;
    let op = s
        .fleet
        .submit_and_approve(&charge_intent(&customer, &pm, 12_500))
        .await;
    // What the approver was shown: the customer and the card, as Stripe describes them.
    let payee = s.fleet.row(&op).await.payee.expect("payer evidence");
    assert_eq!(payee["status"], "found", "{payee}");
    assert_eq!(payee["id"], pm.as_str());
    assert_eq!(payee["name"], "Jane Doe <jane@example.com>");
    assert_eq!(payee["account"]["masked"], "Visa •••• 4242");
    assert_eq!(payee["account"]["scheme"], "card");
    assert_eq!(payee["country"], "FR");
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let intent = charged(&s, &op, 1, 1).await.unwrap();
    assert_eq!(row.external_id.as_deref(), intent["id"].as_str());
    assert!(intent["id"].as_str().unwrap().starts_with("pi_"));
    assert_eq!(intent["status"], "succeeded");
    assert_eq!(intent["amount"], 12_500);
    assert_eq!(intent["currency"], "kzt");
    assert_eq!(intent["customer"], customer.as_str());
    assert_eq!(intent["payment_method"], pm.as_str());
    assert_eq!(intent["metadata"]["fleet_tenant"], fleet_tests::TENANT);
    assert_eq!(intent["metadata"]["fleet_invoice"], "inv_1042");
    let body = &s.proxy.creates()[0].body;
    for field in [
        "confirm=true",
        "off_session=true",
        "amount=12500",
        "currency=kzt",
    ] {
        assert!(body.contains(field), "{field}: {body}");
    }
    s.stop().await;
}

#[tokio::test]
async fn a_declined_card_ends_failed_with_stripes_code() {
    let s = LocalstripeFleet::start().await;
    let (customer, pm) = s.stripe.customer_with_card(DECLINED_WHEN_CHARGED).await;
    let op = s
        .fleet
        .submit_and_approve(&charge_intent(&customer, &pm, 3_000))
        .await;
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&op, Status::Failed).await;
    assert_eq!(row.error_code.as_deref(), Some("card_declined"));
    assert_eq!(row.fence, 1);
    // The declined PaymentIntent is Stripe's record of the attempt, never paid.
    let intent = charged(&s, &op, 1, 1).await.unwrap();
    assert_ne!(intent["status"], "succeeded");
    s.stop().await;
}

#[tokio::test]
async fn an_answer_lost_after_stripe_charged_is_found_by_its_metadata_never_sent_again() {
    let s = LocalstripeFleet::start().await;
    let (customer, pm) = s.stripe.customer_with_card(VISA).await;
    let op = s
        .fleet
        .submit_and_approve(&charge_intent(&customer, &pm, 7_000))
        .await;
    s.proxy.arm(Fault::DropAnswer);
    let _execute = s.spawn("fleet-execute");
    s.fleet.reaches(&op, Status::Unknown).await;
    let _reconcile = s.spawn("fleet-reconcile");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let intent = charged(&s, &op, 1, 1).await.unwrap();
    assert_eq!(row.external_id.as_deref(), intent["id"].as_str());
    assert_eq!(row.fence, 1, "never claimed again");
    // Found by paging the customer's PaymentIntents.
    assert!(s
        .proxy
        .seen()
        .iter()
        .any(|r| r.method == "GET" && r.path == "/v1/payment_intents"));
    s.stop().await;
}

#[tokio::test]
async fn a_payment_method_detached_after_the_approval_cancels_the_charge_unsent() {
    let s = LocalstripeFleet::start().await;
    let (customer, pm) = s.stripe.customer_with_card(VISA).await;
    let op = s
        .fleet
        .submit_and_approve(&charge_intent(&customer, &pm, 5_000))
        .await;
    s.stripe
        .post(&format!("/v1/payment_methods/{pm}/detach"), &[])
        .await;
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&op, Status::Cancelled).await;
    assert_eq!(
        row.status_reason.map(|r| r.as_str()),
        Some("beneficiary_changed")
    );
    assert_eq!(charged(&s, &op, 0, 0).await, None);
    s.stop().await;
}

#[tokio::test]
async fn who_stripe_does_not_know_as_named_is_refused_at_intake() {
    let s = LocalstripeFleet::start().await;
    let (customer, pm) = s.stripe.customer_with_card(VISA).await;
    let (other_customer, _) = s.stripe.customer_with_card(VISA).await;
    let loose = s.stripe.card(VISA).await;
    let mut intent = charge_intent("cus_NoSuchCustomer1", &pm, 100);
    s.fleet.refused_at_intake(&intent, "customer_unknown").await;
    intent = charge_intent(&customer, "pm_NoSuchMethod1", 100);
    s.fleet
        .refused_at_intake(&intent, "payment_method_unknown")
        .await;
    for (who, method) in [(&other_customer, &pm), (&customer, &loose)] {
        let intent = charge_intent(who, method, 100);
        s.fleet
            .refused_at_intake(&intent, "payment_method_not_customers")
            .await;
    }
    assert!(s.proxy.creates().is_empty());
    s.stop().await;
}

#[tokio::test]
async fn a_charge_is_refused_at_intake_unless_payments_are_spoken_as_stripe() {
    let fleet = TestFleet::with_prepare().await;
    fleet
        .refused_at_intake(
            &charge_intent("cus_Abc1", "pm_Abc1", 100),
            "unsupported_provider",
        )
        .await;
    fleet.stop().await;
}

/// A refund through Stripe is read against its PaymentIntent at intake: of a charge the
/// fleet made, a refund within what is left is prepared with the payment as evidence and
/// refunded; one larger than what is left is refused before anyone approves it.
#[tokio::test]
async fn a_refund_is_checked_against_what_is_left_of_its_payment_intent_at_intake() {
    let s = LocalstripeFleet::start().await;
    let (customer, pm) = s.stripe.customer_with_card(VISA).await;
    let charge = s
        .fleet
        .submit_and_approve(&charge_intent(&customer, &pm, 12_500))
        .await;
    let _execute = s.spawn("fleet-execute");
    let pi = s
        .fleet
        .reaches(&charge, Status::Succeeded)
        .await
        .external_id
        .unwrap();
    let mut refund = refund_intent(&pi, 5_000);
    let op = s.fleet.submit_and_approve(&refund).await;
    let prepared = s
        .fleet
        .count(&format!(
            "SELECT count(*) FROM operation_events WHERE operation_id = '{op}' AND kind = 'prepared'
             AND evidence -> 'refunded' ->> 'payment' = '{pi}'
             AND (evidence -> 'refunded' ->> 'received_minor')::bigint = 12500
             AND (evidence -> 'refunded' ->> 'refunded_minor')::bigint = 0
             AND evidence -> 'refunded' ->> 'customer' = '{customer}'"
        ))
        .await;
    assert_eq!(prepared, 1, "the payment is kept as the approver saw it");
    s.fleet.reaches(&op, Status::Succeeded).await;
    // 7,500 are left: 7,501 is more.
    refund = refund_intent(&pi, 7_501);
    s.fleet
        .refused_at_intake(&refund, "refund_exceeds_payment")
        .await;
    let refunds = s.stripe.refunds_of(&pi).await;
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    s.stop().await;
}

#[tokio::test]
async fn a_refund_of_another_tenants_payment_intent_or_of_none_is_refused_at_intake() {
    let s = LocalstripeFleet::start().await;
    let theirs = s
        .stripe
        .paid_intent_with(
            5_000,
            "kzt",
            &[("metadata[fleet_tenant]", "org_someone_else")],
        )
        .await;
    let theirs = theirs["id"].as_str().unwrap();
    s.fleet
        .refused_at_intake(&refund_intent(theirs, 100), "object_of_other_tenant")
        .await;
    s.fleet
        .refused_at_intake(&refund_intent("pi_NoSuchIntent1", 100), "payment_unknown")
        .await;
    assert!(s.proxy.creates().is_empty());
    assert!(s.stripe.refunds_of(theirs).await.is_empty());
    s.stop().await;
}

/// The endpoint's signing secret, as the Stripe dashboard shows it.
const STRIPE_SECRET: &str = "whsec_9kXq2LmT7vR4nB8cW1zY5pJ3hF6dG0sA";

/// A charge whose answer was lost (`unknown`, one PaymentIntent at Stripe), and the
/// webhook receiver speaking Stripe: the receiver and the PaymentIntent.
async fn charge_in_flight(s: &LocalstripeFleet) -> (String, StripeReceiver, Value) {
    let (customer, pm) = s.stripe.customer_with_card(VISA).await;
    let op = s
        .fleet
        .submit_and_approve(&charge_intent(&customer, &pm, 4_200))
        .await;
    s.proxy.arm(Fault::DropAnswer);
    let _execute = s.spawn("fleet-execute");
    s.fleet.reaches(&op, Status::Unknown).await;
    let intent = charged(s, &op, 1, 1).await.unwrap();
    let receiver = s.fleet.stripe_receiver(STRIPE_SECRET, &[]).await;
    (op, receiver, intent)
}

/// `event_type` about `intent`, signed as Stripe signs it, taken.
async fn deliver(receiver: &StripeReceiver, id: &str, event_type: &str, intent: &Value) {
    let event = stripe_event(id, event_type, intent);
    let status = receiver.deliver(STRIPE_SECRET, &event).await;
    assert_eq!(status, reqwest::StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn payment_intent_events_settle_a_charge_in_flight() {
    let s = LocalstripeFleet::start().await;
    let (op, receiver, intent) = charge_in_flight(&s).await;
    // Still processing: heard, nothing applied.
    let mut processing = intent.clone();
    processing["status"] = serde_json::json!("processing");
    deliver(
        &receiver,
        "evt_pi_1",
        "payment_intent.processing",
        &processing,
    )
    .await;
    deliver(&receiver, "evt_pi_2", "payment_intent.succeeded", &intent).await;
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), intent["id"].as_str());
    assert_eq!(row.fence, 1, "settled by the event, never sent again");
    charged(&s, &op, 1, 1).await;
    s.stop().await;
}

#[tokio::test]
async fn a_payment_failed_event_fails_the_charge_with_the_decline() {
    let s = LocalstripeFleet::start().await;
    let (op, receiver, mut intent) = charge_in_flight(&s).await;
    intent["status"] = serde_json::json!("requires_payment_method");
    intent["last_payment_error"] =
        serde_json::json!({"code": "card_declined", "decline_code": "insufficient_funds"});
    deliver(
        &receiver,
        "evt_pi_f",
        "payment_intent.payment_failed",
        &intent,
    )
    .await;
    let row = s.fleet.reaches(&op, Status::Failed).await;
    assert_eq!(row.error_code.as_deref(), Some("insufficient_funds"));
    s.stop().await;
}

#[tokio::test]
async fn the_approval_page_shows_whose_card_is_charged() {
    let s = LocalstripeFleet::start().await;
    let (customer, pm) = s.stripe.customer_with_card(VISA).await;
    let op = s
        .fleet
        .submitted(&charge_intent(&customer, &pm, 12_500))
        .await;
    let issuer = s.fleet.spawn_issuer().await;
    let api = s.fleet.spawn_console(&issuer).await;
    s.fleet
        .person(
            "alice",
            fleet_core::Role::Approver,
            &[fleet_tests::TENANT],
            "sub-alice",
        )
        .await;
    let alice = fleet_tests::session_of(&api, "sub-alice").await;
    let page = fleet_tests::console_get(&api, &alice, &format!("/console/operations/{op}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Charge 125.00 KZT to customer"),
        "the charge in words: {page}"
    );
    let block = page
        .split("<dl class=\"payee\" id=\"payee\">")
        .nth(1)
        .and_then(|rest| rest.split("</dl>").next())
        .expect("the payer block");
    for shown in [
        "Charged to",
        pm.as_str(),
        "Jane Doe &#60;jane@example.com&#62;",
        "Visa •••• 4242",
        "FR",
    ] {
        assert!(block.contains(shown), "{shown} in {block}");
    }
    assert!(!block.contains("Paid to"), "{block}");
    s.stop().await;
}
