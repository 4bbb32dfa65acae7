//! Webhooks sent by the simulator (docs/design.md#provider-webhooks) and their admin API
//! (docs/testing.md#the-provider-simulator): where to
//! send, with which secret, and how badly (duplicates, delay, reordering); settling a
//! pending payment; holding a create's answer so a test can make a webhook overtake it.
//!
//! | request | answer |
//! |---|---|
//! | `POST /_sim/webhooks/config` `{"url", "secret", "duplicate"?, "delay_ms"?, "reorder"?, "hold_response_ms"?}` | `200` the config, secret omitted |
//! | `DELETE /_sim/webhooks/config` | `204`; nothing is sent any more |
//! | `GET /_sim/webhooks/deliveries` | `{"data": [{"event_id", "type", "copy", "attempt", "status" \| "error"}, …]}` |
//! | `POST /_sim/webhooks/release` | `{"released": n}`: held create answers go out now |
//! | `POST /_sim/payments/{id}/settle` `{"status": "succeeded" \| "failed"}` | `200 {"payment", "event_id"}`; `404`; `409` when not pending |
//!
//! What is sent: once webhooks are configured, an object created `succeeded` (or
//! `failed`) announces itself with `payment.succeeded` / `refund.succeeded` (…`failed`)
//! right after its commit, a `pending` one only when it is settled; an envelope with
//! `envelope.sent` / `envelope.delivery_failed` once it is sent (envelopes.rs). A `{provider}`
//! in the URL becomes the sending provider (`payments`, `esign`), so one receiver with a
//! route per provider hears both. Each event goes
//! `1 + duplicate` times, concurrently, with the same `webhook-id`, each attempt signed
//! afresh with the simulator's clock (`/_sim/clock/advance` makes stale timestamps).
//! `delay_ms` waits before sending; `reorder` holds events for `delay_ms` (at least
//! 100 ms) and then sends them newest first. A delivery not answered 2xx is retried up
//! to 8 times with backoff (250 ms doubling, at most 2 s), as providers do.
//! `hold_response_ms` holds the answer of a create that made a new object for that
//! long (or until `release`), after its commit and its webhook.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::api_error::ApiError;
use crate::ledger::ObjectStatus;
use crate::state::App;
use crate::webhook_delivery::{dispatch_if_any, event_if_configured};

const MAX_DUPLICATE: u32 = 10;
const MAX_DELAY_MS: u64 = 60_000;
const MAX_DELIVERY_LOG: usize = 10_000;

/// What the simulator sends where; the key never prints.
#[derive(Clone)]
pub struct WebhookConfig {
    pub url: String,
    pub key: Vec<u8>,
    pub duplicate: u32,
    pub delay: Duration,
    pub reorder: bool,
    pub hold: Duration,
}

impl fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &self.url)
            .field("key", &"<redacted>")
            .field("duplicate", &self.duplicate)
            .field("delay", &self.delay)
            .field("reorder", &self.reorder)
            .field("hold", &self.hold)
            .finish()
    }
}

impl WebhookConfig {
    fn describe(&self) -> Value {
        json!({"url": self.url, "duplicate": self.duplicate, "delay_ms": self.delay.as_millis(),
               "reorder": self.reorder, "hold_response_ms": self.hold.as_millis()})
    }
}

/// The webhook part of the simulator's state (cleared by `/_sim/reset`).
#[derive(Debug, Default)]
pub struct WebhookState {
    pub config: Option<WebhookConfig>,
    /// Objects whose creation was looked at, so a replayed create announces nothing.
    pub announced: HashSet<String>,
    /// Events waiting for a reordered flush, oldest first.
    pub reorder_buffer: Vec<crate::webhook_delivery::OutgoingEvent>,
    pub deliveries: Vec<Value>,
}

impl WebhookState {
    pub fn log_delivery(&mut self, entry: Value) {
        if self.deliveries.len() < MAX_DELIVERY_LOG {
            self.deliveries.push(entry);
        }
    }
}

/// What outlives a reset: the HTTP client and the release signal.
pub struct WebhookRuntime {
    pub client: reqwest::Client,
    pub release: Notify,
}

impl WebhookRuntime {
    pub fn new() -> anyhow::Result<WebhookRuntime> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(WebhookRuntime {
            client,
            release: Notify::new(),
        })
    }
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/_sim/webhooks/config", post(configure).delete(unconfigure))
        .route("/_sim/webhooks/deliveries", axum::routing::get(deliveries))
        .route("/_sim/webhooks/release", post(release))
        .route("/_sim/payments/{id}/settle", post(settle))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigSpec {
    url: String,
    secret: String,
    #[serde(default)]
    duplicate: u32,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    reorder: bool,
    #[serde(default)]
    hold_response_ms: u64,
}

impl ConfigSpec {
    fn validate(self) -> Result<WebhookConfig, ApiError> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(ApiError::invalid("parameter_invalid", "url"));
        }
        let key = self
            .secret
            .strip_prefix("whsec_")
            .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
            .filter(|key| !key.is_empty())
            .ok_or_else(|| ApiError::invalid("parameter_invalid", "secret"))?;
        if self.duplicate > MAX_DUPLICATE {
            return Err(ApiError::invalid("parameter_invalid", "duplicate"));
        }
        if self.delay_ms > MAX_DELAY_MS {
            return Err(ApiError::invalid("parameter_invalid", "delay_ms"));
        }
        if self.hold_response_ms > MAX_DELAY_MS {
            return Err(ApiError::invalid("parameter_invalid", "hold_response_ms"));
        }
        Ok(WebhookConfig {
            url: self.url,
            key,
            duplicate: self.duplicate,
            delay: Duration::from_millis(self.delay_ms),
            reorder: self.reorder,
            hold: Duration::from_millis(self.hold_response_ms),
        })
    }
}

async fn configure(State(app): State<App>, body: Bytes) -> Response {
    let config = match serde_json::from_slice::<ConfigSpec>(&body) {
        Ok(spec) => match spec.validate() {
            Ok(config) => config,
            Err(error) => return error.into_response(),
        },
        Err(_) => return ApiError::invalid_json().into_response(),
    };
    let described = config.describe();
    app.lock().webhooks.config = Some(config);
    Json(described).into_response()
}

async fn unconfigure(State(app): State<App>) -> StatusCode {
    app.lock().webhooks.config = None;
    StatusCode::NO_CONTENT
}

async fn deliveries(State(app): State<App>) -> Response {
    Json(json!({"data": app.lock().webhooks.deliveries})).into_response()
}

async fn release(State(app): State<App>) -> Response {
    app.webhook_runtime().release.notify_waiters();
    Json(json!({"released": true})).into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settle {
    status: String,
}

/// Settles a pending payment and sends its webhook (when webhooks are configured).
async fn settle(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Response {
    let (status, event_type) = match serde_json::from_slice::<Settle>(&body).map(|s| s.status) {
        Ok(s) if s == "succeeded" => (ObjectStatus::Succeeded, "payment.succeeded"),
        Ok(s) if s == "failed" => (ObjectStatus::Failed, "payment.failed"),
        Ok(_) => return ApiError::invalid("parameter_invalid", "status").into_response(),
        Err(_) => return ApiError::invalid_json().into_response(),
    };
    let (payment, event) = {
        let mut state = app.lock();
        let Some(payment) = state.payments.get_mut(&id) else {
            return ApiError::not_found().into_response();
        };
        if payment.status != ObjectStatus::Pending {
            return ApiError::conflict("payment_not_pending").into_response();
        }
        payment.status = status;
        let object = serde_json::to_value(&*payment).expect("a payment serialises");
        let event = event_if_configured(&state, event_type, &object);
        (object, event)
    };
    let event_id = dispatch_if_any(&app, event);
    Json(json!({"payment": payment, "event_id": event_id})).into_response()
}
