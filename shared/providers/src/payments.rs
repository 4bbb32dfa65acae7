//! Adapter for the reference payments API (PROTOCOL.md §3, Stripe-like): creates payments
//! and refunds under an idempotency key, and looks them up by reference or id.
//!
//! A create is sent exactly once per call: no retry, no redirect. The transport result is
//! reported as a [`CallResult`] for `fleet_core::outcome::classify_payment` to judge.
//! Logs carry ids and statuses only: never the API key, never request or response bodies.

use std::fmt;
use std::time::{Duration, Instant};

use fleet_core::outcome::CallResult;
use fleet_runtime::{PaymentsArgs, Secret};
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::Capabilities;
use crate::lookup::{endpoint, get_list, get_object, LookupError};
use crate::transport::{build_client, call_label, classify_send_error, read_answer};

const PROVIDER: &str = "payments";

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

/// Why a client could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("payments base URL must be an http(s) URL: {0}")]
    BaseUrl(String),
    #[error("payments API key contains characters not allowed in a header")]
    ApiKey,
    #[error("payments timeout must be at least 1 ms")]
    Timeout,
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
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
#[derive(Clone)]
pub struct PaymentsClient {
    http: reqwest::Client,
    base: Url,
    /// `Bearer <key>`, marked sensitive so no header dump can show it.
    authorization: HeaderValue,
    timeout_ms: u64,
}

impl fmt::Debug for PaymentsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PaymentsClient")
            .field("base_url", &self.base.as_str())
            .field("api_key", &"[redacted]")
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl PaymentsClient {
    pub fn new(config: PaymentsConfig) -> Result<Self, ConfigError> {
        let base = Url::parse(&config.base_url).map_err(|e| ConfigError::BaseUrl(e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(ConfigError::BaseUrl(format!(
                "scheme {:?} is not http or https",
                base.scheme()
            )));
        }
        let mut authorization =
            HeaderValue::from_str(&format!("Bearer {}", config.api_key.expose()))
                .map_err(|_| ConfigError::ApiKey)?;
        authorization.set_sensitive(true);
        if config.timeout_ms == 0 {
            return Err(ConfigError::Timeout);
        }
        let http =
            build_client(Duration::from_millis(config.timeout_ms)).map_err(ConfigError::Client)?;
        Ok(PaymentsClient {
            http,
            base,
            authorization,
            timeout_ms: config.timeout_ms,
        })
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
        get_object(self.get(endpoint(&self.base, &["v1", "payments", id]))).await
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
        get_object(self.get(endpoint(&self.base, &["v1", "refunds", id]))).await
    }

    async fn create<B: Serialize>(
        &self,
        path: &[&str],
        action: &'static str,
        idempotency_key: &str,
        body: &B,
    ) -> CallResult {
        let started = Instant::now();
        let sent = self
            .http
            .post(endpoint(&self.base, path))
            .header(AUTHORIZATION, self.authorization.clone())
            .header("Idempotency-Key", idempotency_key)
            .json(body)
            .send()
            .await;
        let call = match sent {
            Ok(response) => read_answer(response).await,
            Err(error) => classify_send_error(&error),
        };
        log_call(action, idempotency_key, &call, started.elapsed());
        call
    }

    async fn search(&self, path: &[&str], reference: &str) -> Result<Vec<Value>, LookupError> {
        get_list(
            self.get(endpoint(&self.base, path))
                .query(&[("reference", reference)]),
        )
        .await
    }

    fn get(&self, url: Url) -> reqwest::RequestBuilder {
        self.http
            .get(url)
            .header(AUTHORIZATION, self.authorization.clone())
    }
}

fn log_call(action: &'static str, idempotency_key: &str, call: &CallResult, elapsed: Duration) {
    let elapsed_ms = elapsed.as_millis() as u64;
    match call {
        CallResult::Answer(answer) => tracing::debug!(
            provider = PROVIDER,
            action,
            idempotency_key,
            elapsed_ms,
            status = answer.status,
            replayed = answer.replayed,
            request_id = answer.request_id.as_deref(),
            "provider answered"
        ),
        CallResult::NotSent { detail } => tracing::debug!(
            provider = PROVIDER,
            action,
            idempotency_key,
            elapsed_ms,
            detail = detail.as_str(),
            "provider call not sent"
        ),
        CallResult::NoAnswer { .. } => tracing::debug!(
            provider = PROVIDER,
            action,
            idempotency_key,
            elapsed_ms,
            result = call_label(call),
            "provider call got no answer"
        ),
    }
}
