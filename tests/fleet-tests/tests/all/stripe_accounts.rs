//! A tenant with a Stripe connected account of its own (`PAYMENTS_STRIPE_ACCOUNTS`),
//! through the real `fleet-prepare`, `fleet-execute`, `fleet-reconcile` and
//! `fleet-webhook-ingest` processes, against the project's Stripe simulator, which keeps
//! each account's objects apart as Stripe does (a request sees only the account its
//! `Stripe-Account` header names, else the platform's). The tenant's charge and refund are
//! made inside its account, and every request made for it carries the header; another
//! tenant (on the platform's account, or in an account of its own) never sees them, so its
//! refund of the first tenant's PaymentIntent is refused at intake; a signed event from
//! any other account than the tenant's changes nothing, and the same event from the
//! tenant's account settles the operation.

use fleet_core::Status;
use fleet_provider_sim::stripe::{StripeFault, StripeSim, StripeSimConfig, STRIPE_SIM_KEY};
use fleet_tests::stripe_events::stripe_event;
use fleet_tests::stripe_fleet::stripe_settings;
use fleet_tests::{charge_intent, hash_of, refund_intent, TestFleet, WorkerProcess, TENANT};
use serde_json::{json, Value};

/// [`TENANT`]'s connected account.
const ACME: &str = "acct_1Acme";
/// A tenant with an account of its own too, and that account.
const GLOBEX_TENANT: &str = "org_globex";
const GLOBEX: &str = "acct_2Globex";
/// A tenant on the platform's account.
const PLATFORM_TENANT: &str = "org_483";
/// The tenants' accounts, as every worker is given them.
const ACCOUNTS: &str = "org_482=acct_1Acme,org_globex=acct_2Globex";
/// The customer and the card saved to it, in [`ACME`].
const CUSTOMER: &str = "cus_1Jane";
const CARD: &str = "pm_1JaneVisa";
/// The signing secrets of the platform's endpoint and of the Connect endpoint: Stripe
/// delivers connected accounts' events to an endpoint of their own.
const PLATFORM_SECRET: &str = "whsec_pl4tform0wn1events2only3";
const CONNECT_SECRET: &str = "whsec_c0nnect4ccounts1events2";

struct AccountFleet {
    fleet: TestFleet,
    stripe: StripeSim,
    _prepare: WorkerProcess,
}

impl AccountFleet {
    /// The simulator holding Jane Doe and her Visa in [`ACME`], and a fleet whose payments
    /// provider is Stripe at it, `fleet-prepare` running.
    async fn start() -> AccountFleet {
        let stripe = StripeSim::start(StripeSimConfig::default())
            .await
            .expect("the Stripe simulator");
        stripe.put_customer(
            Some(ACME),
            json!({"id": CUSTOMER, "object": "customer", "name": "Jane Doe",
                   "email": "jane@example.com"}),
        );
        stripe.put_payment_method(
            Some(ACME),
            json!({"id": CARD, "object": "payment_method", "type": "card",
                   "customer": CUSTOMER, "card": {"brand": "visa", "last4": "4242",
                   "country": "FR", "fingerprint": "fpJaneVisa4242"}}),
        );
        let fleet = TestFleet::start().await;
        let prepare = fleet.spawn_process("fleet-prepare", &settings(&stripe.base_url));
        AccountFleet {
            fleet,
            stripe,
            _prepare: prepare,
        }
    }

    fn spawn(&self, binary: &str) -> WorkerProcess {
        self.fleet
            .spawn_process(binary, &settings(&self.stripe.base_url))
    }

    /// The objects of `held` carrying `key` (`metadata[fleet_operation]`).
    fn carrying(held: Vec<Value>, key: &str) -> Vec<Value> {
        held.into_iter()
            .filter(|o| fleet_core::stripe::operation_of(o) == Some(key))
            .collect()
    }

    /// Every request the simulator received so far acted in [`ACME`].
    fn all_in_acme(&self) {
        let requests = self.stripe.requests();
        assert!(!requests.is_empty());
        for request in &requests {
            assert_eq!(request.account.as_deref(), Some(ACME), "{request:?}");
        }
    }

    async fn stop(self) {
        self.fleet.stop().await;
    }
}

/// The settings that make the payments provider Stripe at the simulator at `base_url`,
/// the tenants' accounts given.
fn settings(base_url: &str) -> Vec<(&str, &str)> {
    stripe_settings(
        base_url,
        STRIPE_SIM_KEY,
        &[("PAYMENTS_STRIPE_ACCOUNTS", ACCOUNTS)],
    )
}

/// `intent` for `tenant`.
fn of_tenant(mut intent: Value, tenant: &str) -> Value {
    intent["tenant_id"] = json!(tenant);
    intent
}

#[tokio::test]
async fn a_tenants_charge_and_refund_are_made_inside_its_account_and_no_other_tenant_sees_them() {
    let s = AccountFleet::start().await;
    let charge = s
        .fleet
        .submit_and_approve(&charge_intent(CUSTOMER, CARD, 12_500))
        .await;
    // prepare read the customer and the card inside the account.
    let payee = s.fleet.row(&charge).await.payee.expect("payer evidence");
    assert_eq!(payee["name"], "Jane Doe <jane@example.com>", "{payee}");
    assert_eq!(payee["account"]["masked"], "Visa •••• 4242");
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&charge, Status::Succeeded).await;
    let key = s.fleet.key_of(&charge).await;
    let intents = AccountFleet::carrying(s.stripe.payment_intents_in(Some(ACME)), &key);
    assert_eq!(
        intents.len(),
        1,
        "one PaymentIntent, in the account: {intents:?}"
    );
    let pi = intents[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(row.external_id.as_deref(), Some(pi.as_str()));
    assert_eq!(intents[0]["status"], "succeeded");
    assert_eq!(intents[0]["amount"], 12_500);
    assert_eq!(intents[0]["metadata"]["fleet_tenant"], TENANT);
    assert!(s.stripe.payment_intents_in(None).is_empty());

    // The refund of it: read inside the account at intake, made there.
    let proposed = refund_intent(&pi, 5_000);
    let refund = s.fleet.submitted(&proposed).await;
    let read = s
        .fleet
        .count(&format!(
            "SELECT count(*) FROM operation_events WHERE operation_id = '{refund}'
             AND kind = 'prepared' AND evidence -> 'refunded' ->> 'payment' = '{pi}'
             AND evidence -> 'refunded' ->> 'account' = '{ACME}'
             AND evidence -> 'refunded' ->> 'customer' = '{CUSTOMER}'
             AND evidence -> 'refunded' ->> 'customer_name' = 'Jane Doe'
             AND evidence -> 'refunded' ->> 'customer_email' = 'jane@example.com'
             AND evidence -> 'refunded' ->> 'card' = 'visa •••• 4242'
             AND (evidence -> 'refunded' ->> 'received_minor')::bigint = 12500"
        ))
        .await;
    assert_eq!(
        read, 1,
        "the payment as the approver is shown it, read in the account"
    );
    let rung = s.fleet.approve(&refund, &hash_of(&proposed)).await;
    assert_eq!(rung, Ok(true), "approved, execute rung");
    let row = s.fleet.reaches(&refund, Status::Succeeded).await;
    let key = s.fleet.key_of(&refund).await;
    let refunds = AccountFleet::carrying(s.stripe.refunds_in(Some(ACME)), &key);
    assert_eq!(refunds.len(), 1, "one refund, in the account: {refunds:?}");
    assert_eq!(row.external_id.as_deref(), refunds[0]["id"].as_str());
    assert_eq!(refunds[0]["amount"], 5_000);
    assert_eq!(refunds[0]["payment_intent"], pi.as_str());
    assert!(s.stripe.refunds_in(None).is_empty());
    // No request made for the tenant left without its account.
    s.all_in_acme();

    // Another tenant, on the platform's account or in its own, does not find the payment.
    for tenant in [PLATFORM_TENANT, GLOBEX_TENANT] {
        let theirs = of_tenant(refund_intent(&pi, 100), tenant);
        s.fleet.refused_at_intake(&theirs, "payment_unknown").await;
    }
    let asked: Vec<_> = s
        .stripe
        .requests()
        .into_iter()
        .filter(|r| r.path == format!("/v1/payment_intents/{pi}"))
        .map(|r| r.account)
        .collect();
    for account in [None, Some(GLOBEX.to_owned()), Some(ACME.to_owned())] {
        assert!(asked.contains(&account), "{account:?} in {asked:?}");
    }
    // Nor the customer's card to charge it.
    let theirs = of_tenant(charge_intent(CUSTOMER, CARD, 100), PLATFORM_TENANT);
    s.fleet.refused_at_intake(&theirs, "customer_unknown").await;
    assert_eq!(s.stripe.refunds_in(Some(ACME)).len(), 1);
    assert_eq!(s.stripe.payment_intents_in(Some(ACME)).len(), 1);
    s.stop().await;
}

#[tokio::test]
async fn a_charge_whose_answer_was_lost_is_found_by_reconcile_inside_the_account() {
    let s = AccountFleet::start().await;
    let op = s
        .fleet
        .submit_and_approve(&charge_intent(CUSTOMER, CARD, 7_000))
        .await;
    s.stripe.arm(StripeFault::DropAnswer);
    let _execute = s.spawn("fleet-execute");
    s.fleet.reaches(&op, Status::Unknown).await;
    let _reconcile = s.spawn("fleet-reconcile");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let key = s.fleet.key_of(&op).await;
    let intents = AccountFleet::carrying(s.stripe.payment_intents_in(Some(ACME)), &key);
    assert_eq!(intents.len(), 1, "{intents:?}");
    assert_eq!(row.external_id.as_deref(), intents[0]["id"].as_str());
    assert_eq!(row.fence, 1, "never claimed again");
    // Found by searching the account (an empty search on the platform's would prove
    // nothing about it).
    assert!(s
        .stripe
        .requests()
        .iter()
        .any(|r| r.path == "/v1/payment_intents/search"));
    s.all_in_acme();
    s.stop().await;
}

#[tokio::test]
async fn an_event_of_another_account_changes_nothing_and_the_same_from_the_tenants_settles_it() {
    let s = AccountFleet::start().await;
    let op = s
        .fleet
        .submit_and_approve(&charge_intent(CUSTOMER, CARD, 3_000))
        .await;
    s.stripe.arm(StripeFault::DropAnswer);
    let _execute = s.spawn("fleet-execute");
    s.fleet.reaches(&op, Status::Unknown).await;
    let key = s.fleet.key_of(&op).await;
    let intents = AccountFleet::carrying(s.stripe.payment_intents_in(Some(ACME)), &key);
    assert_eq!(intents.len(), 1, "{intents:?}");
    let intent = &intents[0];
    assert_eq!(intent["status"], "succeeded");

    let secrets = format!("{PLATFORM_SECRET},{CONNECT_SECRET}");
    let receiver = s
        .fleet
        .stripe_receiver(&secrets, &[("PAYMENTS_STRIPE_ACCOUNTS", ACCOUNTS)])
        .await;
    let receiver = &receiver;
    // A Connect event names the account it comes from and is signed by the Connect
    // endpoint; the platform's own names none and is signed by the platform's endpoint.
    let deliver = |id: &str, account: Option<&str>| {
        let mut event = stripe_event(id, "payment_intent.succeeded", intent);
        event["livemode"] = json!(false);
        let secret = match account {
            Some(account) => {
                event["account"] = json!(account);
                CONNECT_SECRET
            }
            None => PLATFORM_SECRET,
        };
        async move { receiver.deliver(secret, &event).await }
    };
    for (id, account) in [
        ("evt_other_1", Some("acct_9Stranger")),
        ("evt_other_2", Some(GLOBEX)),
        ("evt_other_3", None),
    ] {
        assert_eq!(deliver(id, account).await, reqwest::StatusCode::NO_CONTENT);
    }
    let rows = fleet_tests::eventually("the three events to be stored", || async {
        let rows = s.fleet.webhook_rows().await;
        (rows.len() == 3).then_some(rows)
    })
    .await;
    for (event, operation, _) in &rows {
        assert_eq!(operation, &None, "{event} is linked to nothing: {rows:?}");
    }
    let types = s
        .fleet
        .count(
            "SELECT count(*) FROM webhook_events
             WHERE event_type = 'stripe.other_account.payment_intent.succeeded'",
        )
        .await;
    assert_eq!(types, 3, "stored as another account's, applying nothing");
    let still = s.fleet.row(&op).await;
    assert_eq!(still.status, Status::Unknown);
    assert_eq!(still.external_id, None);

    // The same event from the tenant's own account settles it.
    assert_eq!(
        deliver("evt_mine_1", Some(ACME)).await,
        reqwest::StatusCode::NO_CONTENT
    );
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), intent["id"].as_str());
    let rows = s.fleet.webhook_rows().await;
    let mine: Vec<_> = rows.iter().filter(|r| r.0 == "evt_mine_1").collect();
    assert_eq!(mine.len(), 1, "{rows:?}");
    assert_eq!(mine[0].1.as_deref(), Some(op.as_str()));
    assert_eq!(mine[0].2.as_deref(), Some("applied"));
    s.stop().await;
}
