//! `payment.create` with `PAYMENTS_PROVIDER=stripe`: a Connect transfer, through the real
//! `fleet-prepare`, `fleet-execute` and `fleet-reconcile` processes, against the
//! project's Stripe simulator (`fleet_provider_sim::stripe`), which keeps idempotency
//! keys as Stripe does. Each test ends with the promise: the simulator holds at most one
//! transfer carrying the operation's key, and the fleet's final state is what that
//! transfer (or its absence, or Stripe's refusal) proves.

use std::time::Duration;

use fleet_core::Status;
use fleet_provider_sim::stripe::{StripeFault, StripeSim, StripeSimConfig, STRIPE_SIM_KEY};
use fleet_tests::stripe_events::stripe_event;
use fleet_tests::stripe_fleet::stripe_settings;
use fleet_tests::{hash_of, intent, TestFleet, WorkerProcess, TENANT};
use serde_json::{json, Value};

/// The payee, named by its connected account.
const ACCOUNT: &str = "acct_1Vendor77";

/// The payee's connected account as Stripe describes it, paid out to a bank account
/// ending `last4` (`fingerprint` is Stripe's for it).
fn vendor_account(last4: &str, fingerprint: &str) -> Value {
    json!({"id": ACCOUNT, "object": "account", "country": "KZ", "payouts_enabled": true,
           "business_profile": {"name": "Vendor 77 LLP"},
           "external_accounts": {"object": "list", "has_more": false, "data": [
               {"id": "ba_1", "object": "bank_account", "bank_name": "Halyk Bank",
                "country": "KZ", "currency": "kzt", "last4": last4,
                "fingerprint": fingerprint, "default_for_currency": true}]}})
}

/// The Stripe simulator and a fleet whose payments provider is Stripe at it; every
/// worker a real process.
struct TransferFleet {
    fleet: TestFleet,
    stripe: StripeSim,
}

impl TransferFleet {
    async fn start(config: StripeSimConfig) -> TransferFleet {
        let stripe = StripeSim::start(config)
            .await
            .expect("the Stripe simulator");
        stripe.put_account(vendor_account("4321", "fpHalyk4321"));
        let fleet = TestFleet::start().await;
        TransferFleet { fleet, stripe }
    }

    fn spawn(&self, binary: &str, extra: &[(&str, &str)]) -> WorkerProcess {
        let settings = stripe_settings(&self.stripe.base_url, STRIPE_SIM_KEY, extra);
        self.fleet.spawn_process(binary, &settings)
    }

    /// A payment of `amount_minor` to [`ACCOUNT`], prepared by `fleet-prepare` spoken as
    /// Stripe (which admits it) but not approved yet: the intent, its operation and key.
    async fn prepared(&self, amount_minor: i64) -> (Value, String, String) {
        let _prepare = self.spawn("fleet-prepare", &[]);
        let mut payment = intent();
        payment["payload"]["beneficiary_id"] = json!(ACCOUNT);
        payment["payload"]["amount_minor"] = json!(amount_minor);
        let op = self.fleet.submitted(&payment).await;
        let key = self.fleet.key_of(&op).await;
        (payment, op, key)
    }

    /// [`TransferFleet::prepared`], approved.
    async fn approved(&self, amount_minor: i64) -> (String, String) {
        let (payment, op, key) = self.prepared(amount_minor).await;
        let rung = self.fleet.approve(&op, &hash_of(&payment)).await;
        assert_eq!(rung, Ok(true), "approved, execute rung");
        (op, key)
    }

    /// The transfers the simulator holds that carry `key`.
    fn transfers_carrying(&self, key: &str) -> Vec<Value> {
        self.stripe
            .transfers()
            .into_iter()
            .filter(|t| t["metadata"]["fleet_operation"] == key)
            .collect()
    }

    /// The creates the fleet sent: `POST /v1/transfers`, every one on `key`.
    fn creates(&self, key: &str) -> Vec<fleet_provider_sim::stripe::SeenRequest> {
        let creates: Vec<_> = self
            .stripe
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == "/v1/transfers")
            .collect();
        for create in &creates {
            assert_eq!(create.idempotency_key.as_deref(), Some(key), "{create:?}");
        }
        creates
    }

    /// The promise: exactly one transfer carries `key`; it.
    fn paid_once(&self, key: &str) -> Value {
        let carrying = self.transfers_carrying(key);
        assert_eq!(carrying.len(), 1, "one transfer: {carrying:?}");
        carrying.into_iter().next().unwrap()
    }

    async fn stop(self) {
        self.fleet.stop().await;
    }
}

#[tokio::test]
async fn a_payment_is_one_transfer_to_the_payees_connected_account() {
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (op, key) = s.approved(1_250_000).await;
    let _execute = s.spawn("fleet-execute", &[]);
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let transfer = s.paid_once(&key);
    assert_eq!(row.external_id.as_deref(), transfer["id"].as_str());
    assert!(transfer["id"].as_str().unwrap().starts_with("tr_"));
    assert_eq!(transfer["amount"], 1_250_000);
    assert_eq!(transfer["currency"], "kzt");
    assert_eq!(transfer["destination"], ACCOUNT);
    assert_eq!(transfer["transfer_group"], "inv_9182");
    assert_eq!(
        transfer["metadata"],
        json!({"fleet_operation": key, "fleet_tenant": TENANT, "fleet_invoice": "inv_9182"})
    );
    let creates = s.creates(&key);
    assert_eq!(creates.len(), 1);
    assert_eq!(creates[0].param("amount"), Some("1250000"));
    // Who is paid, as the approver was shown it: the account's business and payout account.
    let payee = row.payee.expect("payee evidence kept at intake");
    assert_eq!(payee["status"], "found");
    assert_eq!(payee["id"], ACCOUNT);
    assert_eq!(payee["name"], "Vendor 77 LLP");
    assert_eq!(payee["account"]["masked"], "Halyk Bank •••• 4321");
    s.stop().await;
}

#[tokio::test]
async fn a_payout_account_changed_after_the_approval_cancels_the_payment_unsent() {
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (op, key) = s.approved(2_000).await;
    // "Our new account": the connected account now pays out elsewhere.
    s.stripe
        .put_account(vendor_account("9876", "fpAttacker9876"));
    let _execute = s.spawn("fleet-execute", &[]);
    let row = s.fleet.reaches(&op, Status::Cancelled).await;
    assert_eq!(
        row.status_reason.map(fleet_core::Reason::as_str),
        Some("beneficiary_changed")
    );
    assert!(s.creates(&key).is_empty(), "nothing sent");
    assert!(s.stripe.transfers().is_empty());
    // The account was read again before the transfer would have gone.
    assert!(s
        .stripe
        .requests()
        .iter()
        .any(|r| r.method == "GET" && r.path == format!("/v1/accounts/{ACCOUNT}")));
    s.stop().await;
}

#[tokio::test]
async fn a_connected_account_stripe_does_not_know_is_refused_at_intake() {
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let _prepare = s.spawn("fleet-prepare", &[]);
    let mut payment = intent();
    payment["payload"]["beneficiary_id"] = json!("acct_1Nobody");
    s.fleet.refused_at_intake(&payment, "payee_unknown").await;
    s.stop().await;
}

#[tokio::test]
async fn a_lost_answer_is_found_in_the_invoices_transfer_group_never_sent_again() {
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (op, key) = s.approved(700).await;
    s.stripe.arm(StripeFault::DropAnswer);
    let _execute = s.spawn("fleet-execute", &[]);
    s.fleet.reaches(&op, Status::Unknown).await;
    let _reconcile = s.spawn("fleet-reconcile", &[]);
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let transfer = s.paid_once(&key);
    assert_eq!(row.external_id.as_deref(), transfer["id"].as_str());
    assert_eq!(row.fence, 1, "never claimed again");
    assert_eq!(s.creates(&key).len(), 1, "never sent again");
    assert!(s.stripe.requests().iter().any(|r| r.method == "GET"
        && r.path == "/v1/transfers"
        && r.param("transfer_group") == Some("inv_9182")));
    s.stop().await;
}

#[tokio::test]
async fn an_uncertain_retry_within_the_retention_is_answered_by_the_key_with_the_one_transfer() {
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (op, key) = s.approved(800).await;
    // The transfer is made but its answer lost, and the transfer group's list does not
    // show it for a while: reconcile finds nothing, proves the absence as far as it can,
    // and sends the same request again on the operation's key, which Stripe still keeps.
    s.stripe
        .arm(StripeFault::DropAnswerUnlisted(Duration::from_secs(60)));
    let _execute = s.spawn("fleet-execute", &[]);
    let _reconcile = s.spawn("fleet-reconcile", &[]);
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let transfer = s.paid_once(&key);
    assert_eq!(row.external_id.as_deref(), transfer["id"].as_str());
    let creates = s.creates(&key);
    assert_eq!(creates.len(), 2, "sent again once: {creates:?}");
    assert_eq!(creates[0].status, None, "the first answer was lost");
    assert!(
        creates[1].replayed,
        "the retry got the saved answer: {creates:?}"
    );
    assert_eq!(creates[0].params, creates[1].params, "the same request");
    s.stop().await;
}

#[tokio::test]
async fn a_rate_limited_transfer_is_paced_and_paid_once_never_refused() {
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (op, key) = s.approved(600).await;
    s.stripe.arm(StripeFault::RateLimited);
    // A lease long enough to wait out the pause within the claim.
    let _execute = s.spawn("fleet-execute", &[("LEASE_TTL_MS", "6000")]);
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.fence, 1, "the claim waited, never released");
    let creates = s.creates(&key);
    assert_eq!(
        creates.iter().map(|c| c.status).collect::<Vec<_>>(),
        [Some(429), Some(200)],
        "{creates:?}"
    );
    assert_eq!(creates[0].params, creates[1].params);
    let transfer = s.paid_once(&key);
    assert_eq!(row.external_id.as_deref(), transfer["id"].as_str());
    s.stop().await;
}

#[tokio::test]
async fn a_key_stripe_holds_for_other_parameters_is_escalated_never_sent_again() {
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (payment, op, key) = s.prepared(900).await;
    // Something else was sent under the operation's key first (another amount).
    let foreign = reqwest::Client::new()
        .post(format!("{}/v1/transfers", s.stripe.base_url))
        .bearer_auth(STRIPE_SIM_KEY)
        .header("Idempotency-Key", &key)
        .form(&[
            ("amount", "1"),
            ("currency", "kzt"),
            ("destination", ACCOUNT),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 200);
    assert_eq!(s.fleet.approve(&op, &hash_of(&payment)).await, Ok(true));
    let _execute = s.spawn("fleet-execute", &[]);
    let _reconcile = s.spawn("fleet-reconcile", &[]);
    let row = s
        .fleet
        .escalated_as(&op, Status::Unknown, "idempotency_key_reused")
        .await;
    assert_eq!(row.fence, 1, "never claimed again");
    let creates = s.creates(&key);
    assert_eq!(
        creates.len(),
        2,
        "the foreign one and ours, once: {creates:?}"
    );
    assert_eq!(creates[1].status, Some(400));
    assert!(s.transfers_carrying(&key).is_empty(), "ours made nothing");
    s.stop().await;
}

#[tokio::test]
async fn a_refusal_with_a_code_fails_the_payment_with_it() {
    let s = TransferFleet::start(StripeSimConfig {
        balance_minor: Some(500),
        ..StripeSimConfig::default()
    })
    .await;
    let (op, key) = s.approved(501).await;
    let _execute = s.spawn("fleet-execute", &[]);
    let row = s.fleet.reaches(&op, Status::Failed).await;
    assert_eq!(row.error_code.as_deref(), Some("balance_insufficient"));
    assert!(s.transfers_carrying(&key).is_empty());
    assert_eq!(s.creates(&key).len(), 1);
    s.stop().await;
}

#[tokio::test]
async fn reconcile_concludes_nothing_absent_before_the_search_lag_has_passed() {
    const LAG_MS: u64 = 3_000;
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (op, key) = s.approved(400).await;
    // Refused before Stripe executed anything, but the fleet cannot know that: unknown.
    s.stripe.arm(StripeFault::ServerErrorBeforeExecuting);
    let lag = LAG_MS.to_string();
    let with_lag = [("PAYMENTS_SEARCH_LAG_MS", lag.as_str())];
    let _execute = s.spawn("fleet-execute", &with_lag);
    let _reconcile = s.spawn("fleet-reconcile", &with_lag);
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let transfer = s.paid_once(&key);
    assert_eq!(row.external_id.as_deref(), transfer["id"].as_str());
    let creates = s.creates(&key);
    assert_eq!(creates.len(), 2, "{creates:?}");
    assert_eq!(creates[0].status, Some(500));
    // Reconcile looked, found nothing, and waited for the lag before sending again. The
    // fleet measures the lag from the attempt's start, a moment before Stripe saw it.
    let looked = s
        .stripe
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.at > creates[0].at && r.at < creates[1].at)
        .count();
    assert!(looked >= 1, "looked up before the retry");
    let waited = creates[1].at.duration_since(creates[0].at);
    assert!(
        waited >= Duration::from_millis(LAG_MS - 100),
        "sent again after {waited:?}, before the lag"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_signed_transfer_event_settles_a_payment_whose_answer_was_lost() {
    const SECRET: &str = "whsec_Tr4nsfer5ettle5Pay6ment7";
    let s = TransferFleet::start(StripeSimConfig::default()).await;
    let (op, key) = s.approved(1_100).await;
    s.stripe.arm(StripeFault::DropAnswer);
    let _execute = s.spawn("fleet-execute", &[]);
    s.fleet.reaches(&op, Status::Unknown).await;
    let transfer = s.paid_once(&key);
    let receiver = s.fleet.stripe_receiver(SECRET, &[]).await;
    let created = stripe_event("evt_tr_1", "transfer.created", &transfer);
    let status = receiver.deliver(SECRET, &created).await;
    assert_eq!(status, reqwest::StatusCode::NO_CONTENT);
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), transfer["id"].as_str());
    assert_eq!(row.fence, 1, "settled by the event, never sent again");
    // A reversal later moves the money back; the payment was made all the same.
    let history = s.fleet.history_len(&op).await;
    let mut reversed = transfer.clone();
    reversed["reversed"] = json!(true);
    reversed["amount_reversed"] = json!(1_100);
    let reversal_event = stripe_event("evt_tr_2", "transfer.reversed", &reversed);
    let status = receiver.deliver(SECRET, &reversal_event).await;
    assert_eq!(status, reqwest::StatusCode::NO_CONTENT);
    let rows = fleet_tests::eventually("the reversal stored", || async {
        let rows = s.fleet.webhook_rows().await;
        rows.iter().any(|r| r.0 == "evt_tr_2").then_some(rows)
    })
    .await;
    let reversal = rows.iter().find(|r| r.0 == "evt_tr_2").unwrap();
    assert_eq!(reversal.1.as_deref(), Some(op.as_str()), "linked: {rows:?}");
    assert_eq!(
        reversal.2.as_deref(),
        Some("ignored_transition"),
        "{rows:?}"
    );
    let after = s.fleet.row(&op).await;
    assert_eq!(after.status, Status::Succeeded);
    assert_eq!(after.escalated_at, None);
    assert_eq!(s.fleet.history_len(&op).await, history, "nothing applied");
    assert_eq!(s.creates(&key).len(), 1);
    s.stop().await;
}
