//! One provider API endpoint: base URL, credentials and the pooled client, shared by the
//! adapters so each only describes its routes. A side-effecting request goes through
//! `call` (or [`Api::send`] for a [`Request`] an adapter built), which sends it once and
//! reports what the transport saw.

use std::fmt;
use std::time::{Duration, Instant};

use fleet_core::outcome::CallResult;
use fleet_runtime::Secret;
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Method, RequestBuilder, Url};

use crate::lookup::endpoint;
use crate::request::Request;
use crate::transport::{build_client, call_label, classify_send_error, read_answer};

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
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("provider", &self.provider)
            .field("base_url", &self.base.as_str())
            .field("api_key", &"[redacted]")
            .field("timeout_ms", &self.timeout_ms)
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
        })
    }

    pub(crate) fn request(&self, method: Method, path: &[&str]) -> RequestBuilder {
        self.http
            .request(method, endpoint(&self.base, path))
            .header(AUTHORIZATION, self.authorization.clone())
    }

    pub(crate) fn get(&self, path: &[&str]) -> RequestBuilder {
        self.request(Method::GET, path)
    }

    /// Sends an adapter's request once, on behalf of `action` for operation `subject`.
    pub(crate) async fn send(
        &self,
        request: &Request,
        action: &'static str,
        subject: &str,
    ) -> CallResult {
        let mut http = self
            .request(request.method.clone(), &request.path())
            .json(&request.body);
        if let Some(key) = &request.idempotency_key {
            http = http.header("Idempotency-Key", key);
        }
        if let Some(version) = &request.if_match {
            http = http.header("If-Match", format!("\"{version}\""));
        }
        self.call(http, action, subject).await
    }

    /// Sends a side-effecting request once. `subject` (an operation id) is logged; bodies
    /// never are.
    pub(crate) async fn call(
        &self,
        request: RequestBuilder,
        action: &'static str,
        subject: &str,
    ) -> CallResult {
        let started = Instant::now();
        let call = match request.send().await {
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
