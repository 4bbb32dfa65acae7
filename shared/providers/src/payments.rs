//! Mapping for the reference payments API (Stripe-like): serves `payment.create` and
//! `refund.create`, each a create under an idempotency key, and looks them up by id or
//! by reference; its directory of beneficiaries is read by id.
//!
//! A create is sent exactly once per call: no retry, no redirect. The transport result is
//! reported as a [`CallResult`] for the action's catalogue entry to classify.
//! Logs carry ids and statuses only: never the API key, never request or response bodies.

use fleet_core::actions::payment_create::PaymentPayload;
use fleet_core::actions::refund_create::RefundPayload;
use fleet_core::catalogue::provider_spec;
use fleet_core::outcome::CallResult;
use fleet_core::{Action, ProviderName};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{
    by_id_else, looked, BoxFuture, LookFailed, Looked, Operation, PayeeAnswer, Request, Unbuildable,
};
use crate::client::{Client, Mapping};
use crate::lookup::LookupError;

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

/// The payments API's mapping.
#[derive(Debug)]
pub enum Payments {}

/// A pooled client for the payments API.
pub type PaymentsClient = Client<Payments>;

impl Client<Payments> {
    /// `POST /v1/payments` once, under `idempotency_key` (the operation id).
    pub async fn create_payment(
        &self,
        idempotency_key: &str,
        request: &PaymentRequest,
    ) -> CallResult {
        let request =
            Request::new(Method::POST, &["v1", "payments"], request).with_key(idempotency_key);
        self.api()
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
        self.api()
            .send(&request, "refund.create", idempotency_key)
            .await
    }

    /// `GET /v1/payments?reference=…`: every payment with that reference. Eventually
    /// consistent: an empty list proves absence only for attempts older than the search lag.
    pub async fn find_payments_by_reference(
        &self,
        reference: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.api()
            .list(&["v1", "payments"], "reference", reference)
            .await
    }

    /// `GET /v1/payments/{id}` (strongly consistent); `None` on 404.
    pub async fn get_payment(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "payments", id]).await
    }

    /// `GET /v1/beneficiaries/{id}` (strongly consistent): the payee a payment to `id`
    /// goes to, with its masked account and version; `None` on 404. With `name`
    /// (`?name=…`), the answer also says whether it is the account holder's
    /// (`name_check`, docs/protocol.md#payee-directory).
    pub async fn get_beneficiary(
        &self,
        id: &str,
        name: Option<&str>,
    ) -> Result<Option<Value>, LookupError> {
        let query: Vec<(&str, &str)> = name.map(|n| ("name", n)).into_iter().collect();
        self.api()
            .object_with(&["v1", "beneficiaries", id], &query)
            .await
    }

    /// `GET /v1/refunds?reference=…`: same rules as payments.
    pub async fn find_refunds_by_reference(
        &self,
        reference: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.api()
            .list(&["v1", "refunds"], "reference", reference)
            .await
    }

    /// `GET /v1/refunds/{id}`; `None` on 404.
    pub async fn get_refund(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "refunds", id]).await
    }
}

impl Mapping for Payments {
    const PROVIDER: ProviderName = provider_spec::PAYMENTS.name;

    fn request(op: &Operation<'_>) -> Result<Request, Unbuildable> {
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
        Ok(Request::new(Method::POST, &["v1", path], &body))
    }

    /// By the object's id when known (strongly consistent); not there, or no id yet: the
    /// search by reference, which the lag rules judge.
    fn look_up<'a>(
        client: &'a PaymentsClient,
        op: &'a Operation<'a>,
        external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>> {
        let collection = match op.action {
            Action::RefundCreate => "refunds",
            _ => "payments",
        };
        let api = client.api();
        let by_id = external_id.map(|id| async move { api.object(&["v1", collection, id]).await });
        let search = async move {
            let path = ["v1", collection];
            looked(
                "reference",
                api.list(&path, "reference", op.subject.reference).await,
            )
        };
        Box::pin(by_id_else(by_id, search))
    }

    fn look_up_payee<'a>(
        client: &'a PaymentsClient,
        id: &'a str,
        name: Option<&'a str>,
    ) -> Option<BoxFuture<'a, PayeeAnswer>> {
        Some(Box::pin(client.get_beneficiary(id, name)))
    }
}
