//! The HTTP receiver: `POST /webhooks/{provider}`. It reads the body under its deadlines
//! (`WEBHOOK_BODY_TIMEOUT_MS`, and no slower than `WEBHOOK_BODY_MIN_BYTES_PER_S` after
//! `WEBHOOK_BODY_GRACE_MS`), verifies the Standard Webhooks signature over the raw bytes,
//! and only then takes one of the request slots to publish a `webhook.v2` envelope (the signature headers
//! and the raw body, for the consumer to verify again) to `webhooks.ingest`
//! and waits for the broker's confirm, and only then answers 204. It stores nothing: a
//! refused delivery leaves no trace but a log line and a counter, and an accepted one is
//! the consumer's from the moment the broker confirmed it.
//!
//! | answer | when |
//! |---|---|
//! | 204 | verified and confirmed by the broker |
//! | 400 | a signature header missing, repeated, malformed or too long |
//! | 401 | no matching signature, or the timestamp is more than 300 s away |
//! | 404 | unknown provider |
//! | 408 | the body did not arrive in time (the connection is closed) |
//! | 413 | body larger than `WEBHOOK_MAX_BODY_BYTES` |
//! | 503 | every request slot stayed taken for `WEBHOOK_BODY_TIMEOUT_MS`, or the broker did not confirm: the provider retries later, nothing is lost |
//!
//! `POST /webhooks/stripe` (only when payments are spoken as Stripe; 404 otherwise) is
//! the same path for Stripe's events: `Stripe-Signature` verified over the raw bytes
//! with `PAYMENTS_WEBHOOK_SECRET` ([`crate::stripe_signature`]), the same body
//! deadlines and slots, an envelope for the payments provider, 204. Every refusal of a
//! Stripe delivery is 400 (Stripe's own convention), counted as `rejected_signature` or
//! `rejected_request` like the others.
//!
//! A slow or unsigned body holds no slot: the slots are for deliveries already verified,
//! so clients that trickle their bodies cannot delay a provider's. Connections themselves
//! are bounded by [`fleet_runtime::http_server`].

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use chrono::Utc;
use fleet_core::catalogue::provider_spec::PAYMENTS;
use fleet_runtime::metric_names as m;
use fleet_runtime::{http_server, paced, BodyPace, ConnectionLimits, RequestSlots};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::clock::unix_now;
use crate::envelope::Envelope;
use crate::limits::RequestLimits;
use crate::publish::IngestPublisher;
use crate::secrets::WebhookSecrets;
use crate::settings::KNOWN_PROVIDERS;
use crate::signature::{self, SignedHeaders};
use crate::stripe_signature::{self, StripeSecret};

/// What a 503 asks the provider to wait before retrying.
const RETRY_AFTER_S: &str = "5";

#[derive(Clone)]
pub struct ReceiverState {
    secrets: Arc<WebhookSecrets>,
    publisher: Arc<IngestPublisher>,
    limits: RequestLimits,
    turns: RequestSlots,
    stripe: Option<Arc<StripeSecret>>,
}

impl ReceiverState {
    pub fn new(
        secrets: WebhookSecrets,
        publisher: Arc<IngestPublisher>,
        limits: RequestLimits,
    ) -> ReceiverState {
        ReceiverState {
            secrets: Arc::new(secrets),
            publisher,
            limits,
            turns: RequestSlots::new(limits.max_concurrent),
            stripe: None,
        }
    }

    /// Serves `POST /webhooks/stripe`, verified with `secret` (none: 404).
    pub fn with_stripe(mut self, secret: Option<StripeSecret>) -> ReceiverState {
        self.stripe = secret.map(Arc::new);
        self
    }
}

pub fn router(state: ReceiverState) -> Router {
    Router::new()
        .route("/webhooks/stripe", post(receive_stripe))
        .route("/webhooks/{provider}", post(receive))
        // The limit is enforced while reading, in `read_body`; axum's default would cut first.
        .layer(DefaultBodyLimit::disable())
        // The sender's trace (or a new one): every line logged about the delivery carries it.
        .layer(axum::middleware::from_fn(
            fleet_runtime::trace::traced_request,
        ))
        .with_state(state)
}

/// Serves the receiver on `listener` until `shutdown`; in-flight requests finish first.
pub async fn serve(
    listener: TcpListener,
    state: ReceiverState,
    connections: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    http_server::serve(
        "webhook receiver",
        listener,
        router(state),
        connections,
        shutdown,
    )
    .await
}

async fn receive(
    State(state): State<ReceiverState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(provider) = KNOWN_PROVIDERS.iter().copied().find(|p| *p == provider) else {
        return refuse(StatusCode::NOT_FOUND, "unknown_provider");
    };
    let signed = match SignedHeaders::from_headers(&headers) {
        Ok(signed) => signed,
        Err(rejection) => return rejected(provider, rejection),
    };
    let body = match read_body(body, state.limits.max_body_bytes, state.limits.body).await {
        Ok(body) => body,
        Err(status) => return body_not_read(provider, status),
    };
    if let Err(rejection) = signature::verify(&state.secrets, &signed, &body, unix_now()) {
        return rejected(provider, rejection);
    }
    let event_id = Some(signed.id);
    publish(&state, provider, "webhook", event_id, || {
        Envelope::new(provider, (&signed).into(), Utc::now(), &body)
    })
    .await
}

/// Publishes a verified delivery with confirm, holding a request slot until the answer
/// (the envelope lives that long): 204 once the broker confirmed it; 503 when no slot
/// freed up within the body timeout, or the broker did not confirm. `what` names the
/// delivery in the logs.
async fn publish(
    state: &ReceiverState,
    provider: &'static str,
    what: &str,
    event_id: Option<&str>,
    envelope: impl FnOnce() -> Envelope,
) -> Response {
    let deadline = Instant::now() + state.limits.body.total;
    let Some(_turn) = state.turns.take_by(deadline).await else {
        warn!(
            provider,
            "webhook receiver busy: every request slot is taken; answering 503"
        );
        count(provider, "receiver_busy");
        return unavailable("receiver_busy");
    };
    match state.publisher.publish(&envelope().to_bytes()).await {
        Ok(()) => {
            info!(provider, event_id, "{what} accepted");
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => {
            warn!(provider, event_id, error = %e, "broker did not confirm the {what}; answering 503");
            count(provider, "broker_unavailable");
            unavailable("broker_unavailable")
        }
    }
}

/// Stripe's delivery of a payments event; see the module's doc.
async fn receive_stripe(
    State(state): State<ReceiverState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(secret) = state.stripe.clone() else {
        return refuse(StatusCode::NOT_FOUND, "unknown_provider");
    };
    let provider = PAYMENTS.name.as_str();
    let mut values = headers.get_all(stripe_signature::HEADER).iter();
    let signature = match (values.next(), values.next()) {
        (Some(one), None) => one.as_bytes().to_vec(),
        (None, _) => {
            return stripe_rejected(signature::Rejection::MissingHeader(
                stripe_signature::HEADER,
            ))
        }
        (Some(_), Some(_)) => {
            return stripe_rejected(signature::Rejection::RepeatedHeader(
                stripe_signature::HEADER,
            ))
        }
    };
    let body = match read_body(body, state.limits.max_body_bytes, state.limits.body).await {
        Ok(body) => body,
        Err(status) => return body_not_read(provider, status),
    };
    let at_receipt = signature::Freshness::AT_RECEIPT;
    if let Err(rejection) =
        stripe_signature::verify(&secret, &signature, &body, unix_now(), at_receipt)
    {
        return stripe_rejected(rejection);
    }
    // Verified: the header is visible ASCII.
    let header = String::from_utf8_lossy(&signature);
    publish(&state, provider, "Stripe webhook", None, || {
        Envelope::stripe(&header, Utc::now(), &body)
    })
    .await
}

/// Every refusal of a Stripe delivery is 400, counted as the others are.
fn stripe_rejected(rejection: signature::Rejection) -> Response {
    let provider = PAYMENTS.name.as_str();
    let outcome = match rejection.status() {
        StatusCode::UNAUTHORIZED => "rejected_signature",
        _ => "rejected_request",
    };
    warn!(provider, reason = rejection.code(), detail = %rejection, "Stripe webhook refused");
    count(provider, outcome);
    refuse(StatusCode::BAD_REQUEST, rejection.code())
}

fn body_not_read(provider: &'static str, status: StatusCode) -> Response {
    count(provider, "rejected_request");
    let mut answer = refuse(status, "body_not_read");
    // What is left of a late body is not waited for.
    answer.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    answer
}

/// 503 with `Retry-After`: the provider retries, nothing is lost.
fn unavailable(code: &'static str) -> Response {
    let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, code);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from_static(RETRY_AFTER_S),
    );
    response
}

/// Reads at most `limit` bytes, paced by `pace`.
async fn read_body(body: Body, limit: usize, pace: BodyPace) -> Result<Bytes, StatusCode> {
    let (body, watch) = paced(body, pace);
    match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => Ok(bytes),
        Err(_) if watch.late() => Err(StatusCode::REQUEST_TIMEOUT),
        // Over the limit, or the client went away mid-body (it will not read the answer).
        Err(_) => Err(StatusCode::PAYLOAD_TOO_LARGE),
    }
}

fn rejected(provider: &'static str, rejection: signature::Rejection) -> Response {
    let status = rejection.status();
    let outcome = if status == StatusCode::UNAUTHORIZED {
        "rejected_signature"
    } else {
        "rejected_request"
    };
    warn!(provider, reason = rejection.code(), detail = %rejection, "webhook refused");
    count(provider, outcome);
    refuse(status, rejection.code())
}

fn refuse(status: StatusCode, code: &'static str) -> Response {
    (status, Json(json!({"error": {"code": code}}))).into_response()
}

fn count(provider: &'static str, outcome: &'static str) {
    metrics::counter!(m::WEBHOOK_EVENTS_TOTAL, "provider" => provider, "outcome" => outcome)
        .increment(1);
}
