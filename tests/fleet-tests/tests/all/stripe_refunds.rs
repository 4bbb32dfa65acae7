//! `refund.create` with `PAYMENTS_PROVIDER=stripe`, through the real `fleet-execute` and
//! `fleet-reconcile` processes, against localstripe behind the harness's fault-injecting
//! proxy. localstripe ignores `Idempotency-Key`, so the fleet runs with a key retention of
//! 0: a second request on an operation's key would show as a second refund. Each test
//! ends with the promise: the operation's refunds in localstripe (those whose
//! `metadata[fleet_operation]` is its key) are at most one, and the fleet's final state is
//! that refund's status (or, when there is none, a person's decision).

use std::time::Duration;

use fleet_core::Status;
use fleet_tests::{
    refund_intent, Fault, Localstripe, StripeProxy, TestFleet, WorkerProcess, LOCALSTRIPE_KEY,
};
use serde_json::Value;

/// localstripe, the proxy in front of it, and a fleet (prepare in-process) whose payments
/// provider is Stripe at the proxy.
struct StripeFleet {
    fleet: TestFleet,
    stripe: Localstripe,
    proxy: StripeProxy,
}

/// A call's whole timeout: the held answer outlasts it.
const TIMEOUT_MS: &str = "1500";

impl StripeFleet {
    async fn start() -> StripeFleet {
        let stripe = Localstripe::start().await;
        let proxy = StripeProxy::start(&stripe.base_url).await;
        let fleet = TestFleet::with_prepare().await;
        StripeFleet {
            fleet,
            stripe,
            proxy,
        }
    }

    /// The settings that make the payments provider Stripe at the proxy.
    fn settings<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut env = vec![
            ("PAYMENTS_PROVIDER", "stripe"),
            ("PAYMENTS_URL", self.proxy.base_url.as_str()),
            ("PAYMENTS_API_KEY", LOCALSTRIPE_KEY),
            ("PAYMENTS_KEY_RETENTION_S", "0"),
            // A list of refunds is read straight from the store: no lag.
            ("PAYMENTS_SEARCH_LAG_MS", "0"),
            ("PAYMENTS_TIMEOUT_MS", TIMEOUT_MS),
            ("LEASE_TTL_MS", "1500"),
            ("SWEEP_INTERVAL_MS", "100"),
            ("LOOKUP_RECHECK_MS", "200"),
            ("UNSTARTED_REDRIVE_MS", "500"),
        ];
        env.extend_from_slice(extra);
        env
    }

    fn spawn(&self, binary: &str) -> WorkerProcess {
        self.fleet.spawn_process(binary, &self.settings(&[]))
    }

    /// A refund of `amount_minor` of a fresh PaymentIntent of 5000, approved: the
    /// operation and the PaymentIntent.
    async fn approved_refund(&self, amount_minor: i64) -> (String, String) {
        let intent = self.stripe.paid_intent(5_000, "kzt").await;
        let op = self
            .fleet
            .submit_and_approve(&refund_intent(&intent, amount_minor))
            .await;
        (op, intent)
    }

    async fn key_of(&self, op: &str) -> String {
        self.fleet.row(op).await.idempotency_key.as_str().to_owned()
    }

    /// The promise: one create was sent, under the operation's key, and localstripe holds
    /// `refunds` refunds carrying the key; the refund's id and status (when one).
    async fn sent_once(&self, op: &str, intent: &str, refunds: usize) -> Option<Value> {
        let key = self.key_of(op).await;
        let creates = self.proxy.creates();
        assert_eq!(creates.len(), 1, "one create, never a second: {creates:?}");
        assert_eq!(creates[0].idempotency_key.as_deref(), Some(key.as_str()));
        let carrying = self.stripe.refunds_carrying(intent, &key).await;
        assert_eq!(carrying.len(), refunds, "{carrying:?}");
        carrying.into_iter().next()
    }

    async fn stop(self) {
        self.fleet.stop().await;
    }
}

#[tokio::test]
async fn a_refund_is_one_form_post_and_ends_as_the_refund_it_made() {
    let s = StripeFleet::start().await;
    let (op, intent) = s.approved_refund(1_250).await;
    let _execute = s.spawn("fleet-execute");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let refund = s.sent_once(&op, &intent, 1).await.unwrap();
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
    let s = StripeFleet::start().await;
    let (op, intent) = s.approved_refund(700).await;
    s.proxy.arm(Fault::DropAnswer);
    let _execute = s.spawn("fleet-execute");
    s.fleet.reaches(&op, Status::Unknown).await;
    let _reconcile = s.spawn("fleet-reconcile");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let refund = s.sent_once(&op, &intent, 1).await.unwrap();
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
    let s = StripeFleet::start().await;
    let (op, intent) = s.approved_refund(900).await;
    s.proxy.arm(Fault::HoldAnswer(Duration::from_secs(4)));
    let _execute = s.spawn("fleet-execute");
    let _reconcile = s.spawn("fleet-reconcile");
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    let refund = s.sent_once(&op, &intent, 1).await.unwrap();
    assert_eq!(row.external_id.as_deref(), refund["id"].as_str());
    let first = s.fleet.first_attempt_finished(&op).await;
    assert_eq!(first.outcome.map(|o| o.as_str()), Some("unknown"));
    s.stop().await;
}

#[tokio::test]
async fn execute_killed_while_stripe_holds_the_answer_is_settled_by_lookup_with_one_refund() {
    let s = StripeFleet::start().await;
    let (op, intent) = s.approved_refund(1_000).await;
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
    let refund = s.sent_once(&op, &intent, 1).await.unwrap();
    assert_eq!(refund["status"], "succeeded");
    assert_eq!(row.external_id.as_deref(), refund["id"].as_str());
    assert_eq!(row.fence, 1, "never claimed again");
    s.stop().await;
}

#[tokio::test]
async fn a_5xx_before_stripe_saw_it_makes_no_refund_and_no_blind_retry() {
    let s = StripeFleet::start().await;
    let (op, intent) = s.approved_refund(300).await;
    s.proxy.arm(Fault::BadGatewayBeforeForwarding);
    let _execute = s.spawn("fleet-execute");
    let _reconcile = s.spawn("fleet-reconcile");
    // Nothing found, and Stripe's double keeps no key: a person decides, nothing is resent.
    let row = s
        .fleet
        .escalated_as(&op, Status::Unknown, "key_retention_passed")
        .await;
    assert_eq!(row.fence, 1, "never claimed again");
    assert_eq!(s.sent_once(&op, &intent, 0).await, None);
    s.stop().await;
}

#[tokio::test]
async fn a_rate_limited_refund_waits_and_goes_again_on_its_key_never_a_refusal() {
    let s = StripeFleet::start().await;
    let (op, intent) = s.approved_refund(600).await;
    s.proxy.arm(Fault::RateLimitedBeforeForwarding);
    // A lease long enough to wait out the second Stripe asks for within the claim.
    let _execute = s
        .fleet
        .spawn_process("fleet-execute", &s.settings(&[("LEASE_TTL_MS", "6000")]));
    let row = s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.fence, 1, "the claim waited, never released");
    // The 429 was refused in front of Stripe: the same request went once more.
    let key = s.key_of(&op).await;
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
    let s = StripeFleet::start().await;
    // A PaymentIntent that was never paid: localstripe refuses to refund it (400).
    let customer = s
        .stripe
        .post("/v1/customers", &[("email", "x@example.com")])
        .await;
    let unpaid = s
        .stripe
        .post(
            "/v1/payment_intents",
            &[
                ("amount", "5000"),
                ("currency", "kzt"),
                ("customer", customer["id"].as_str().unwrap()),
            ],
        )
        .await;
    let intent = unpaid["id"].as_str().unwrap().to_owned();
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
    let s = StripeFleet::start().await;
    s.proxy.refuse_over_refunds();
    let (first, intent) = s.approved_refund(4_000).await;
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
    let key = s.key_of(&over).await;
    assert!(s.stripe.refunds_carrying(&intent, &key).await.is_empty());
    let refunds = s.stripe.refunds_of(&intent).await;
    assert_eq!(refunds.len(), 1, "only the first refund: {refunds:?}");
    assert_eq!(refunds[0]["amount"], 4_000);
    s.stop().await;
}

#[tokio::test]
async fn a_worker_without_a_stripe_key_stops_at_start_naming_the_setting() {
    let s = StripeFleet::start().await;
    let mut bad = s.fleet.spawn_process(
        "fleet-execute",
        &s.settings(&[("PAYMENTS_API_KEY", "pk_test_public")]),
    );
    let status = fleet_tests::eventually("the worker to exit", || {
        let exited = bad.exited();
        async move { exited }
    })
    .await;
    assert!(!status.success());
    let log = bad.log_text();
    assert!(
        log.contains("PAYMENTS_API_KEY is not a Stripe API key"),
        "{log}"
    );
    assert!(
        !log.contains("pk_test_public"),
        "the key is not printed: {log}"
    );
    s.stop().await;
}
