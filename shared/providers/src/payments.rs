//! Adapter for the reference payments API (docs/design.md#payments-api, Stripe-like):
//! creates payments and refunds under an idempotency key, and looks them up by reference or
//! id.
//!
//! A create is sent exactly once per call: no retry, no redirect. The transport result is
//! reported as a [`CallResult`] for `fleet_core::outcome::classify_payment` to judge.
//! Logs carry ids and statuses only: never the API key, never request or response bodies.

use fleet_core::outcome::CallResult;
use fleet_runtime::{PaymentsArgs, Secret};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{Api, ConfigError};
use crate::capabilities::Capabilities;
use crate::lookup::{get_list, get_object, LookupError};

/// What the payments API guarantees: idempotent creates (24 h key retention), lookup by
/// reference (eventually consistent, within the search lag) and by id, no conditional updates.
pub fn capabilities() -> Capabilities {
    Capabilities {
        idempotent_create: true,
        lookup: true,
        conditional_update: false,
    }
}

/// How to reach the payments API.
#[derive(Debug, Clone)]
pub struct PaymentsConfig {
    pub base_url: String,
    pub api_key: Secret<String>,
    /// Whole-call timeout (connect to last body byte).
    pub timeout_ms: u64,
}

impl PaymentsConfig {
    pub fn from_args(args: &PaymentsArgs) -> Self {
        PaymentsConfig {
            base_url: args.payments_url.clone(),
            api_key: args.payments_api_key.clone(),
            timeout_ms: args.payments_timeout_ms,
        }
    }
}

/// `POST /v1/payments` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRequest {
    pub amount_minor: i64,
    pub currency: String,
    pub beneficiary_id: String,
    pub invoice_id: String,
    /// The operation id: what reconcile searches by.
    pub reference: String,
}

/// `POST /v1/refunds` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundRequest {
    pub payment_id: String,
    pub amount_minor: i64,
    pub currency: String,
    pub reason: String,
    /// The operation id: what reconcile searches by.
    pub reference: String,
}

/// A pooled client for the payments API. Cheap to clone (the pool is shared).
#[derive(Clone, Debug)]
pub struct PaymentsClient {
    api: Api,
}

impl PaymentsClient {
    pub fn new(config: PaymentsConfig) -> Result<Self, ConfigError> {
        Ok(PaymentsClient { api: Api::new("payments", &config.base_url, &config.api_key, config.timeout_ms)? })
    }

    /// `POST /v1/payments` once, under `idempotency_key` (the operation id).
    pub async fn create_payment(
        &self,
        idempotency_key: &str,
        request: &PaymentRequest,
    ) -> CallResult {
        self.create(
            &["v1", "payments"],
            "payment.create",
            idempotency_key,
            request,
        )
        .await
    }

    /// `POST /v1/refunds` once, under `idempotency_key` (the operation id).
    pub async fn create_refund(
        &self,
        idempotency_key: &str,
        request: &RefundRequest,
    ) -> CallResult {
        self.create(
            &["v1", "refunds"],
            "refund.create",
            idempotency_key,
            request,
        )
        .await
    }

    /// `GET /v1/payments?reference=…`: every payment with that reference. Eventually
    /// consistent: an empty list proves absence only for attempts older than the search lag.
    pub async fn find_payments_by_reference(
        &self,
        reference: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.search(&["v1", "payments"], reference).await
    }

    /// `GET /v1/payments/{id}` (strongly consistent); `None` on 404.
    pub async fn get_payment(&self, id: &str) -> Result<Option<Value>, LookupError> {
        get_object(self.api.get(&["v1", "payments", id])).await
    }

    /// `GET /v1/refunds?reference=…`: same rules as payments.
    pub async fn find_refunds_by_reference(
        &self,
        reference: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.search(&["v1", "refunds"], reference).await
    }

    /// `GET /v1/refunds/{id}`; `None` on 404.
    pub async fn get_refund(&self, id: &str) -> Result<Option<Value>, LookupError> {
        get_object(self.api.get(&["v1", "refunds", id])).await
    }

    async fn create<B: Serialize>(
        &self,
        path: &[&str],
        action: &'static str,
        idempotency_key: &str,
        body: &B,
    ) -> CallResult {
        let request = self.api.post(path).header("Idempotency-Key", idempotency_key).json(body);
        self.api.call(request, action, idempotency_key).await
    }

    async fn search(&self, path: &[&str], reference: &str) -> Result<Vec<Value>, LookupError> {
        get_list(self.api.get(path).query(&[("reference", reference)])).await
    }
}

