//! Stripe's events at the real `fleet-webhook-ingest` process run with
//! `PAYMENTS_PROVIDER=stripe`, signed here exactly as Stripe signs them (`t=…,v1=<hex>`
//! over `<t>.<raw body>` with the endpoint's secret).

use fleet_webhook_ingest::stripe_signature::sign;
use fleet_webhook_ingest::StripeSecret;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{free_addr, now_s, TestFleet, WorkerProcess, WEBHOOK_SECRET};

/// A `fleet-webhook-ingest` process taking Stripe's events at `url`.
pub struct StripeReceiver {
    pub process: WorkerProcess,
    /// `http://…/webhooks/stripe`
    pub url: String,
    http: reqwest::Client,
}

impl TestFleet {
    /// Starts `fleet-webhook-ingest` with payments spoken as Stripe, checking Stripe's
    /// signatures with `stripe_secrets` (one, or several comma-separated), with `extra`
    /// settings; subscribed before this returns.
    pub async fn stripe_receiver(
        &self,
        stripe_secrets: &str,
        extra: &[(&str, &str)],
    ) -> StripeReceiver {
        let addr = free_addr();
        let mut env = vec![
            ("WEBHOOK_SECRETS", WEBHOOK_SECRET),
            ("WEBHOOK_ADDR", addr.as_str()),
            ("PAYMENTS_PROVIDER", "stripe"),
            ("PAYMENTS_WEBHOOK_SECRET", stripe_secrets),
        ];
        env.extend_from_slice(extra);
        let process = self.spawn_process("fleet-webhook-ingest", &env);
        process.wait_for_log("consumer subscribed").await;
        StripeReceiver {
            process,
            url: format!("http://{addr}/webhooks/stripe"),
            http: self.http.clone(),
        }
    }
}

impl StripeReceiver {
    /// POSTs `body` with `signature` as its `Stripe-Signature` (none when `None`): the
    /// receiver's status.
    pub async fn post(&self, signature: Option<&str>, body: &[u8]) -> StatusCode {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json");
        if let Some(signature) = signature {
            request = request.header("Stripe-Signature", signature);
        }
        request
            .body(body.to_vec())
            .send()
            .await
            .expect("the receiver answers")
            .status()
    }

    /// `event` signed now with `secret`: the receiver's status.
    pub async fn deliver(&self, secret: &str, event: &Value) -> StatusCode {
        let body = serde_json::to_vec(event).unwrap();
        self.post(Some(&stripe_signature(secret, now_s(), &body)), &body)
            .await
    }
}

/// The `Stripe-Signature` of `body` at `timestamp` with the endpoint secret `secret`.
pub fn stripe_signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    sign(&StripeSecret::parse(secret).unwrap(), timestamp, body)
}

/// The event `id` of `event_type` about `object`, created now, as Stripe words it.
pub fn stripe_event(id: &str, event_type: &str, object: &Value) -> Value {
    json!({"id": id, "object": "event", "type": event_type, "api_version": "2024-06-20",
           "created": now_s(), "data": {"object": object}})
}
