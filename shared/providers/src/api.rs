//! One provider API endpoint: base URL, credentials and the pooled client, shared by the
//! adapters so each only describes its routes. A side-effecting request goes through
//! `call` (or [`Api::send`] for a [`Request`] an adapter built), which sends it once and
//! reports what the transport saw.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_core::outcome::CallResult;
use fleet_core::stripe::accounts::ACCOUNT_HEADER;
use fleet_core::throttle::DEFAULT_RETRY_AFTER;
use fleet_runtime::metric_names as m;
use fleet_runtime::{Pacer, Secret};
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};

use crate::path::{endpoint, UnsafeSegment};
use crate::request::{Encoding, Request};
use crate::transport::{
    build_client, call_label, classify_send_error, read_answer, retry_after_of,
};

/// Run after a request's slot came and right before it is sent; `false`: do not send it.
pub type SendGate<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

/// Why a client could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} base URL must be an http(s) URL: {1}")]
    BaseUrl(&'static str, String),
    #[error("{0} API key contains characters not allowed in a header")]
    ApiKey(&'static str),
    #[error("{0} timeout must be at least 1 ms")]
    Timeout(&'static str),
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("no adapter serves the provider {0:?}")]
    UnknownProvider(&'static str),
}

/// One provider's endpoint. Cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct Api {
    provider: &'static str,
    http: reqwest::Client,
    base: Url,
    /// `Bearer <key>`, marked sensitive so no header dump can show it.
    authorization: HeaderValue,
    timeout_ms: u64,
    /// The provider's rate limit, when it has one: every request waits for a slot, and a
    /// 429 is reported to it. `None`: requests go at once.
    pacer: Option<Arc<dyn Pacer>>,
    /// The Stripe connected account every request acts in (`Stripe-Account`), for a
    /// tenant that has one; `None`: the account the key belongs to.
    account: Option<String>,
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("provider", &self.provider)
            .field("base_url", &self.base.as_str())
            .field("api_key", &"[redacted]")
            .field("timeout_ms", &self.timeout_ms)
            .field("paced", &self.pacer.is_some())
            .field("account", &self.account)
            .finish()
    }
}

impl Api {
    pub(crate) fn new(
        provider: &'static str,
        base_url: &str,
        api_key: &Secret<String>,
        timeout_ms: u64,
    ) -> Result<Api, ConfigError> {
        let base =
            Url::parse(base_url).map_err(|e| ConfigError::BaseUrl(provider, e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(ConfigError::BaseUrl(
                provider,
                format!("scheme {:?} is not http or https", base.scheme()),
            ));
        }
        let mut authorization = HeaderValue::from_str(&format!("Bearer {}", api_key.expose()))
            .map_err(|_| ConfigError::ApiKey(provider))?;
        authorization.set_sensitive(true);
        if timeout_ms == 0 {
            return Err(ConfigError::Timeout(provider));
        }
        let http = build_client(Duration::from_millis(timeout_ms)).map_err(ConfigError::Client)?;
        Ok(Api {
            provider,
            http,
            base,
            authorization,
            timeout_ms,
            pacer: None,
            account: None,
        })
    }

    /// The same endpoint, its requests acting in the connected `account` (none: the key's
    /// own account). Cheap: the pool and the pacer are shared.
    pub(crate) fn in_account(&self, account: Option<&str>) -> Api {
        Api {
            account: account.map(str::to_owned),
            ..self.clone()
        }
    }

    /// The connected account its requests act in.
    pub(crate) fn account(&self) -> Option<&str> {
        self.account.as_deref()
    }

    /// From now on every request to this provider waits for a slot of `pacer`.
    pub(crate) fn pace(&mut self, pacer: Arc<dyn Pacer>) {
        self.pacer = Some(pacer);
    }

    /// Sends one request (a create or a lookup) once its slot came, and tells the pacer
    /// of a 429. Every request an adapter makes goes through here.
    pub(crate) async fn exchange(&self, request: RequestBuilder) -> reqwest::Result<Response> {
        self.slot().await;
        self.exchange_in_slot(request).await
    }

    /// Waits for this provider's next slot (at once when it is not paced).
    async fn slot(&self) {
        if let Some(pacer) = &self.pacer {
            let asked = Instant::now();
            pacer.slot().await;
            metrics::histogram!(m::PROVIDER_SLOT_WAIT_SECONDS, "provider" => self.provider)
                .record(asked.elapsed().as_secs_f64());
        }
    }

    /// Sends one request whose slot came, and tells the pacer of a 429. A 401 or 403 is
    /// counted on its own: the operation is escalated whatever the action, but what an SRE
    /// must mend is the deployment's key, seen here across every operation at once.
    async fn exchange_in_slot(&self, request: RequestBuilder) -> reqwest::Result<Response> {
        let response = request.send().await?;
        if matches!(
            response.status(),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            metrics::counter!(m::PROVIDER_CREDENTIALS_REFUSED_TOTAL, "provider" => self.provider)
                .increment(1);
            tracing::warn!(
                provider = self.provider,
                status = response.status().as_u16(),
                "the provider refused the fleet's credentials"
            );
        }
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            metrics::counter!(m::PROVIDER_THROTTLED_TOTAL, "provider" => self.provider)
                .increment(1);
            let retry_after = retry_after_of(response.headers()).unwrap_or(DEFAULT_RETRY_AFTER);
            tracing::debug!(
                provider = self.provider,
                retry_after_ms = retry_after.as_millis() as u64,
                "provider rate limited a request"
            );
            if let Some(pacer) = &self.pacer {
                pacer.throttled(retry_after).await;
            }
        }
        Ok(response)
    }

    /// A request to `path` (segments, each percent-encoded); refused when a segment would
    /// not stay one path level ([`crate::path`]).
    pub(crate) fn request(
        &self,
        method: Method,
        path: &[&str],
    ) -> Result<RequestBuilder, UnsafeSegment> {
        let request = self
            .http
            .request(method, endpoint(&self.base, path)?)
            .header(AUTHORIZATION, self.authorization.clone());
        // The trace of the operation the request is about (`fleet_runtime::trace`), so that
        // the provider's side of the call joins the agent's trace.
        let request = match fleet_runtime::trace::current_header() {
            Some(traceparent) => request.header(fleet_core::trace_context::HEADER, traceparent),
            None => request,
        };
        // Every request, creates and lookups alike: an object of a connected account is
        // found only inside it.
        Ok(match &self.account {
            Some(account) => request.header(ACCOUNT_HEADER, account),
            None => request,
        })
    }

    pub(crate) fn get(&self, path: &[&str]) -> Result<RequestBuilder, UnsafeSegment> {
        self.request(Method::GET, path)
    }

    /// Sends an adapter's request once, on behalf of `action` for operation `subject`.
    pub(crate) async fn send(
        &self,
        request: &Request,
        action: &'static str,
        subject: &str,
    ) -> CallResult {
        self.send_gated(request, action, subject, None).await
    }

    /// [`Api::send`], with `gate` run after the request's slot came and right before it
    /// is handed to the network: `false` (or a gate that cannot tell) and nothing is sent
    /// (`NotSent`). Execute's gate commits the attempt's durable send mark, so that a
    /// claim that dies while it waits for its slot provably sent nothing.
    pub(crate) async fn send_gated(
        &self,
        request: &Request,
        action: &'static str,
        subject: &str,
        gate: Option<SendGate<'_>>,
    ) -> CallResult {
        let mut http = match self.request(request.method.clone(), &request.path()) {
            Ok(http) => match request.encoding {
                Encoding::Json => http.json(&request.body),
                Encoding::Form => http.form(&request.body),
            },
            // `Provider::request` refuses such a request before it gets here.
            Err(unsafe_path) => {
                return CallResult::NotSent {
                    detail: unsafe_path.to_string(),
                }
            }
        };
        if let Some(key) = &request.idempotency_key {
            http = http.header("Idempotency-Key", key);
        }
        if let Some(version) = &request.if_match {
            http = http.header("If-Match", format!("\"{version}\""));
        }
        self.call_gated(http, action, subject, gate).await
    }

    /// Sends a side-effecting request once, after its slot and its `gate`. `subject` (an
    /// operation id) is logged; bodies never are.
    async fn call_gated(
        &self,
        request: RequestBuilder,
        action: &'static str,
        subject: &str,
        gate: Option<SendGate<'_>>,
    ) -> CallResult {
        let started = Instant::now();
        self.slot().await;
        if let Some(gate) = gate {
            if !gate.await {
                let call = CallResult::NotSent {
                    detail: "the send mark could not be written".to_owned(),
                };
                self.log_call(action, subject, &call, started.elapsed());
                return call;
            }
        }
        let call = match self.exchange_in_slot(request).await {
            Ok(response) => read_answer(response).await,
            Err(error) => classify_send_error(&error),
        };
        self.log_call(action, subject, &call, started.elapsed());
        call
    }

    fn log_call(&self, action: &'static str, subject: &str, call: &CallResult, elapsed: Duration) {
        let elapsed_ms = elapsed.as_millis() as u64;
        let provider = self.provider;
        match call {
            CallResult::Answer(answer) => tracing::debug!(
                provider,
                action,
                reference = subject,
                elapsed_ms,
                status = answer.status,
                replayed = answer.replayed,
                request_id = answer.request_id.as_deref(),
                "provider answered"
            ),
            CallResult::NotSent { detail } => {
                tracing::debug!(
                    provider,
                    action,
                    reference = subject,
                    elapsed_ms,
                    detail = detail.as_str(),
                    "provider call not sent"
                )
            }
            CallResult::NoAnswer { .. } => {
                tracing::debug!(
                    provider,
                    action,
                    reference = subject,
                    elapsed_ms,
                    result = call_label(call),
                    "provider call got no answer"
                )
            }
        }
    }
}
