//! Adapter for the reference payments API (Stripe-like): serves `payment.create` and
//! `refund.create`, each a create under an idempotency key, and looks them up by id or
//! by reference.
//!
//! A create is sent exactly once per call: no retry, no redirect. The transport result is
//! reported as a [`CallResult`] for the action's catalogue entry to classify.
//! Logs carry ids and statuses only: never the API key, never request or response bodies.

use std::time::Duration;

use fleet_core::actions::payment_create::PaymentPayload;
use fleet_core::actions::refund_create::RefundPayload;
use fleet_core::outcome::CallResult;
use fleet_core::Action;
use fleet_runtime::Secret;
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{
    looked, looked_one, Adapter, BoxFuture, LookFailed, Looked, Operation, PayeeAnswer, Request,
    Unbuildable,
};
use crate::api::{Api, ConfigError};
use crate::capabilities::Capabilities;
use crate::lookup::LookupError;

/// What the payments API guarantees: idempotent creates (keys kept `key_retention`, 24 h
/// for the reference API), lookup by reference (eventually consistent, within the search
/// lag) and by id, no conditional updates; its directory of beneficiaries is read by id
/// (strongly consistent) and a payment can be made conditional on the beneficiary's
/// version.
pub fn capabilities(key_retention: Duration) -> Capabilities {
    Capabilities {
        idempotent_create: Some(key_retention),
        lookup: true,
        conditional_update: false,
        payee_lookup: true,
        payee_precondition: true,
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

/// `POST /v1/payments` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRequest {
    pub amount_minor: i64,
    pub currency: String,
    pub beneficiary_id: String,
    pub invoice_id: String,
    /// The operation id: what reconcile searches by.
    pub reference: String,
    /// The beneficiary's version the approver was shown: the provider refuses the payment
    /// (409 `beneficiary_changed`, nothing created) when the beneficiary changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beneficiary_version: Option<i64>,
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
        Ok(PaymentsClient {
            api: Api::new(
                "payments",
                &config.base_url,
                &config.api_key,
                config.timeout_ms,
            )?,
        })
    }

    /// `POST /v1/payments` once, under `idempotency_key` (the operation id).
    pub async fn create_payment(
        &self,
        idempotency_key: &str,
        request: &PaymentRequest,
    ) -> CallResult {
        let request =
            Request::new(Method::POST, &["v1", "payments"], request).with_key(idempotency_key);
        self.api
            .send(&request, "payment.create", idempotency_key)
            .await
    }

    /// `POST /v1/refunds` once, under `idempotency_key` (the operation id).
    pub async fn create_refund(
        &self,
        idempotency_key: &str,
        request: &RefundRequest,
    ) -> CallResult {
        let request =
            Request::new(Method::POST, &["v1", "refunds"], request).with_key(idempotency_key);
        self.api
            .send(&request, "refund.create", idempotency_key)
            .await
    }

    /// `GET /v1/payments?reference=…`: every payment with that reference. Eventually
    /// consistent: an empty list proves absence only for attempts older than the search lag.
    pub async fn find_payments_by_reference(
        &self,
        reference: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.api
            .list(&["v1", "payments"], "reference", reference)
            .await
    }

    /// `GET /v1/payments/{id}` (strongly consistent); `None` on 404.
    pub async fn get_payment(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api.object(&["v1", "payments", id]).await
    }

    /// `GET /v1/beneficiaries/{id}` (strongly consistent): the payee a payment to `id`
    /// goes to, with its masked account and version; `None` on 404.
    pub async fn get_beneficiary(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api.object(&["v1", "beneficiaries", id]).await
    }

    /// `GET /v1/refunds?reference=…`: same rules as payments.
    pub async fn find_refunds_by_reference(
        &self,
        reference: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.api
            .list(&["v1", "refunds"], "reference", reference)
            .await
    }

    /// `GET /v1/refunds/{id}`; `None` on 404.
    pub async fn get_refund(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api.object(&["v1", "refunds", id]).await
    }
}

impl Adapter for PaymentsClient {
    fn api(&self) -> &Api {
        &self.api
    }

    fn api_mut(&mut self) -> &mut Api {
        &mut self.api
    }

    fn look_up_payee<'a>(&'a self, id: &'a str) -> Option<BoxFuture<'a, PayeeAnswer>> {
        Some(Box::pin(self.get_beneficiary(id)))
    }

    fn request(&self, op: &Operation<'_>) -> Result<Request, Unbuildable> {
        let reference = op.subject.reference.to_owned();
        let (path, body) = match op.action {
            Action::PaymentCreate => {
                let p: PaymentPayload = op.payload()?;
                let body = PaymentRequest {
                    amount_minor: p.amount_minor,
                    currency: p.currency,
                    beneficiary_id: p.beneficiary_id,
                    invoice_id: p.invoice_id,
                    reference,
                    beneficiary_version: op.payee_version,
                };
                ("payments", serde_json::to_value(body))
            }
            Action::RefundCreate => {
                let p: RefundPayload = op.payload()?;
                let body = RefundRequest {
                    payment_id: p.payment_id,
                    amount_minor: p.amount_minor,
                    currency: p.currency,
                    reason: p.reason,
                    reference,
                };
                ("refunds", serde_json::to_value(body))
            }
            other => return Err(Unbuildable(other.wire_name())),
        };
        let body = body.map_err(|_| Unbuildable(op.action.wire_name()))?;
        Ok(Request::new(Method::POST, &["v1", path], &body).with_key(op.idempotency_key))
    }

    /// By the object's id when known (strongly consistent); not there, or no id yet: the
    /// search by reference, which the lag rules judge.
    fn look_up<'a>(
        &'a self,
        op: &'a Operation<'a>,
        external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>> {
        Box::pin(async move {
            let refund = op.action == Action::RefundCreate;
            if let Some(id) = external_id {
                let by_id = if refund {
                    self.get_refund(id).await
                } else {
                    self.get_payment(id).await
                };
                match by_id {
                    Ok(None) => {}
                    other => return looked_one("external_id", other),
                }
            }
            let reference = op.subject.reference;
            let search = if refund {
                self.find_refunds_by_reference(reference).await
            } else {
                self.find_payments_by_reference(reference).await
            };
            looked("reference", search)
        })
    }
}
