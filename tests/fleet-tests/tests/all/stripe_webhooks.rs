//! Stripe's refund events at `POST /webhooks/stripe`, through the real
//! `fleet-webhook-ingest` process run with `PAYMENTS_PROVIDER=stripe`. The refunds are
//! made by the real `fleet-execute` against localstripe, whose answer the proxy drops,
//! so the operation is in flight (`unknown`) with a refund at Stripe carrying its key.
//! The events are signed here exactly as Stripe signs them (`t=…,v1=<hex>` over
//! `<t>.<raw body>` with the endpoint secret): the refund object in each is the one
//! localstripe holds.

use fleet_core::Status;
use fleet_tests::stripe_events::{stripe_event, stripe_signature, StripeReceiver};
use fleet_tests::stripe_fleet::LocalstripeFleet;
use fleet_tests::{
    admin_url_of, free_addr, now_s, refund_intent, scrape, Fault, Localstripe, StripeProxy,
    TestFleet, WorkerProcess, WEBHOOK_SECRET,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The endpoint's signing secret, as the Stripe dashboard shows it.
const STRIPE_SECRET: &str = "whsec_9kXq2LmT7vR4nB8cW1zY5pJ3hF6dG0sA";
/// The secret before a rotation (Stripe signs with both while it lasts).
const OLD_STRIPE_SECRET: &str = "whsec_Old0secret1for2rotation3tests4";

struct StripeHooks {
    fleet: TestFleet,
    stripe: Localstripe,
    _proxy: StripeProxy,
    _execute: WorkerProcess,
    receiver: StripeReceiver,
    op: String,
    /// The refund localstripe made for the operation.
    refund: Value,
}

impl StripeHooks {
    /// An approved refund whose answer was lost: `unknown`, with one refund at Stripe.
    async fn in_flight() -> StripeHooks {
        let s = LocalstripeFleet::with_prepare_at_the_simulator().await;
        let intent = s.stripe.paid_intent(5_000, "kzt").await;
        let op = s
            .fleet
            .submit_and_approve(&refund_intent(&intent, 1_200))
            .await;
        s.proxy.arm(Fault::DropAnswer);
        let execute = s.spawn("fleet-execute");
        s.fleet.reaches(&op, Status::Unknown).await;
        let key = s.fleet.key_of(&op).await;
        let mut refunds = s.stripe.refunds_carrying(&intent, &key).await;
        assert_eq!(refunds.len(), 1, "{refunds:?}");
        let refund = refunds.remove(0);
        let receiver = s.fleet.stripe_receiver(STRIPE_SECRET, &[]).await;
        let LocalstripeFleet {
            fleet,
            stripe,
            proxy,
        } = s;
        StripeHooks {
            fleet,
            stripe,
            _proxy: proxy,
            _execute: execute,
            receiver,
            op,
            refund,
        }
    }

    /// `type` about the operation's refund, as Stripe words it, with `status`.
    fn event(&self, id: &str, event_type: &str, status: &str) -> Vec<u8> {
        let mut refund = self.refund.clone();
        refund["status"] = json!(status);
        serde_json::to_vec(&stripe_event(id, event_type, &refund)).unwrap()
    }

    async fn post(&self, signature: Option<&str>, body: &[u8]) -> StatusCode {
        self.receiver.post(signature, body).await
    }

    /// Signed now with the endpoint's secret.
    async fn deliver(&self, body: &[u8]) -> StatusCode {
        self.post(Some(&stripe_signature(STRIPE_SECRET, now_s(), body)), body)
            .await
    }

    /// The dedup rows once `event_id`'s is there (the consumer got that far).
    async fn rows_after(&self, event_id: &str) -> Vec<(String, Option<String>, Option<String>)> {
        fleet_tests::eventually(&format!("{event_id} to be stored"), || async {
            let rows = self.fleet.webhook_rows().await;
            rows.iter().any(|r| r.0 == event_id).then_some(rows)
        })
        .await
    }

    async fn stop(self) {
        let StripeHooks { fleet, stripe, .. } = self;
        fleet.stop().await;
        drop(stripe);
    }
}

#[tokio::test]
async fn a_signed_refund_updated_settles_an_in_flight_refund_and_its_redelivery_applies_nothing() {
    let s = StripeHooks::in_flight().await;
    let body = s.event("evt_settles_1", "refund.updated", "succeeded");
    assert_eq!(s.deliver(&body).await, StatusCode::NO_CONTENT);
    let row = s.fleet.reaches(&s.op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), s.refund["id"].as_str());
    let history = s.fleet.history_len(&s.op).await;
    // Stripe delivers the same event again (a lost 2xx): deduplicated by its evt_ id.
    assert_eq!(s.deliver(&body).await, StatusCode::NO_CONTENT);
    let marker = s.event("evt_settles_2", "customer.updated", "succeeded");
    assert_eq!(s.deliver(&marker).await, StatusCode::NO_CONTENT);
    let rows = s.rows_after("evt_settles_2").await;
    let settles: Vec<_> = rows.iter().filter(|r| r.0 == "evt_settles_1").collect();
    assert_eq!(settles.len(), 1, "{rows:?}");
    assert_eq!(settles[0].1.as_deref(), Some(s.op.as_str()));
    assert_eq!(settles[0].2.as_deref(), Some("applied"));
    assert_eq!(s.fleet.history_len(&s.op).await, history, "applied once");
    assert_eq!(s.fleet.row(&s.op).await.fence, row.fence);
    s.stop().await;
}

#[tokio::test]
async fn forged_stale_and_unsigned_stripe_deliveries_are_400_and_change_nothing() {
    let s = StripeHooks::in_flight().await;
    let body = s.event("evt_forged_1", "refund.updated", "succeeded");
    let forged = stripe_signature(OLD_STRIPE_SECRET, now_s(), &body);
    let stale = stripe_signature(STRIPE_SECRET, now_s() - 301, &body);
    let tampered_body = s.event("evt_forged_1", "refund.updated", "failed");
    let tampered = stripe_signature(STRIPE_SECRET, now_s(), &body);
    for (what, signature, body) in [
        ("forged", Some(forged.as_str()), &body),
        ("stale", Some(stale.as_str()), &body),
        ("missing", None, &body),
        ("tampered", Some(tampered.as_str()), &tampered_body),
        ("malformed", Some("t=1,v1=nothex"), &body),
    ] {
        assert_eq!(
            s.post(signature, body).await,
            StatusCode::BAD_REQUEST,
            "{what}"
        );
    }
    // The consumer has handled everything before this one: nothing else was stored.
    let marker = s.event("evt_forged_2", "customer.updated", "succeeded");
    assert_eq!(s.deliver(&marker).await, StatusCode::NO_CONTENT);
    let rows = s.rows_after("evt_forged_2").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(s.fleet.row(&s.op).await.status, Status::Unknown);
    let admin = admin_url_of(&s.receiver.process).await;
    let metrics = scrape(&s.fleet.http, &admin).await.unwrap();
    let refused = metrics
        .lines()
        .find(|l| {
            l.starts_with("fleet_webhook_events_total{")
                && l.contains("provider=\"payments\"")
                && l.contains("outcome=\"rejected_signature\"")
        })
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(
        refused.ends_with(" 3"),
        "forged, stale, tampered: {refused}"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_charge_refunded_settles_the_refund_it_lists() {
    let s = StripeHooks::in_flight().await;
    let charge = json!({"id": "ch_listing", "object": "charge", "refunded": true,
        "refunds": {"object": "list", "data": [s.refund.clone()]}});
    let body = serde_json::to_vec(&json!({"id": "evt_charge_1", "object": "event",
        "type": "charge.refunded", "data": {"object": charge}}))
    .unwrap();
    assert_eq!(s.deliver(&body).await, StatusCode::NO_CONTENT);
    let row = s.fleet.reaches(&s.op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), s.refund["id"].as_str());
    let rows = s
        .rows_after(&format!(
            "evt_charge_1:{}",
            s.refund["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    s.stop().await;
}

#[tokio::test]
async fn a_failed_refund_event_fails_the_operation_with_stripes_reason() {
    let s = StripeHooks::in_flight().await;
    let mut refund = s.refund.clone();
    refund["status"] = json!("failed");
    refund["failure_reason"] = json!("expired_or_canceled_card");
    let body = serde_json::to_vec(&json!({"id": "evt_failed_1", "object": "event",
        "type": "refund.failed", "data": {"object": refund}}))
    .unwrap();
    assert_eq!(s.deliver(&body).await, StatusCode::NO_CONTENT);
    let row = s.fleet.reaches(&s.op, Status::Failed).await;
    assert_eq!(row.error_code.as_deref(), Some("expired_or_canceled_card"));
    s.stop().await;
}

#[tokio::test]
async fn a_pending_refund_event_applies_nothing() {
    let s = StripeHooks::in_flight().await;
    let body = s.event("evt_pending_1", "refund.updated", "pending");
    assert_eq!(s.deliver(&body).await, StatusCode::NO_CONTENT);
    let rows = s.rows_after("evt_pending_1").await;
    assert_eq!(rows[0].2.as_deref(), Some("ignored_transition"), "{rows:?}");
    assert_eq!(s.fleet.row(&s.op).await.status, Status::Unknown);
    s.stop().await;
}

#[tokio::test]
async fn without_payments_spoken_as_stripe_the_path_is_not_served() {
    let mut fleet = TestFleet::start().await;
    let ingest = fleet.spawn_webhook_ingest().await;
    let body = br#"{"id":"evt_1","type":"refund.updated","data":{"object":{}}}"#;
    let answer = fleet
        .http
        .post(format!("{}/webhooks/stripe", ingest.base_url))
        .header(
            "Stripe-Signature",
            stripe_signature(STRIPE_SECRET, now_s(), body),
        )
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    assert!(fleet.webhook_rows().await.is_empty());
    fleet.stop().await;
}

#[tokio::test]
async fn during_a_secret_rotation_a_second_matching_v1_is_accepted() {
    let s = StripeHooks::in_flight().await;
    let body = s.event("evt_rotation_1", "refund.updated", "succeeded");
    let t = now_s();
    let v1 = |secret: &str| {
        stripe_signature(secret, t, &body)
            .split_once(",v1=")
            .unwrap()
            .1
            .to_owned()
    };
    let header = format!(
        "t={t},v1={},v1={}",
        v1(OLD_STRIPE_SECRET),
        v1(STRIPE_SECRET)
    );
    assert_eq!(s.post(Some(&header), &body).await, StatusCode::NO_CONTENT);
    s.fleet.reaches(&s.op, Status::Succeeded).await;
    s.stop().await;
}

#[tokio::test]
async fn an_unknown_stripe_event_type_is_acknowledged_counted_and_applies_nothing() {
    let s = StripeHooks::in_flight().await;
    let body = s.event("evt_unknown_1", "payout.paid", "succeeded");
    assert_eq!(s.deliver(&body).await, StatusCode::NO_CONTENT);
    let rows = s.rows_after("evt_unknown_1").await;
    assert_eq!(
        rows,
        vec![(
            "evt_unknown_1".to_owned(),
            None,
            Some("ignored_type".to_owned())
        )]
    );
    assert_eq!(s.fleet.row(&s.op).await.status, Status::Unknown);
    let admin = admin_url_of(&s.receiver.process).await;
    let metrics = scrape(&s.fleet.http, &admin).await.unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("fleet_webhook_events_total{")
                && l.contains("provider=\"payments\"")
                && l.contains("outcome=\"ignored_type\"")
                && l.ends_with(" 1")),
        "{metrics}"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_malformed_stripe_webhook_secret_stops_the_worker_at_start_naming_the_setting() {
    let fleet = TestFleet::start().await;
    let mut bad = fleet.spawn_process(
        "fleet-webhook-ingest",
        &[
            ("WEBHOOK_SECRETS", WEBHOOK_SECRET),
            ("WEBHOOK_ADDR", free_addr().as_str()),
            ("PAYMENTS_PROVIDER", "stripe"),
            ("PAYMENTS_WEBHOOK_SECRET", "sk_test_notasecret"),
        ],
    );
    bad.refuses_to_start("PAYMENTS_WEBHOOK_SECRET must be whsec_", "notasecret")
        .await;
    fleet.stop().await;
}
