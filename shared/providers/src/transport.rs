//! The one place where an HTTP exchange becomes a [`CallResult`] or a lookup answer.
//!
//! The mapping is what makes `unknown` honest: only an error raised while connecting (or
//! while building the request, before any byte left) proves the provider never saw the
//! call. Everything after that point (timeouts, resets, truncated bodies) may hide an
//! effect, so it is `NoAnswer`, never `NotSent`.

use std::time::Duration;

use fleet_core::outcome::{CallResult, NoAnswerKind, ProviderAnswer};
use reqwest::header::HeaderMap;
use reqwest::Response;
use serde_json::Value;

/// Largest response body we read. A bigger body is not read at all: for a create the
/// answer is then `body: Null` (its status still counts), for a lookup it is an error.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// The connect phase gets at most this long, so that a dead host is reported quickly as
/// `NotSent` instead of eating the whole call timeout (and becoming `NoAnswer`).
pub(crate) const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Builds the pooled client an adapter owns.
///
/// No automatic retries, anywhere: reqwest's default policy only re-sends HTTP/2 requests
/// the server provably refused (REFUSED_STREAM, GOAWAY), and we switch even that off with
/// `retry::never()`. What remains is hyper's re-send of a request that was *never
/// started* because the pooled connection it was queued on closed first; no byte of it
/// reached the provider, so that is not a second call. Redirects are not followed: a 3xx
/// to a side-effecting POST is an answer to classify, not an instruction.
pub(crate) fn build_client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        // Shorter than common server keep-alive timeouts, so we rarely write a request on a
        // connection the server is closing (which would surface as a reset: unknown).
        .pool_idle_timeout(Duration::from_secs(20))
        .user_agent(concat!("fleet-providers/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Maps an error from `send()` (no response head was received).
pub(crate) fn classify_send_error(error: &reqwest::Error) -> CallResult {
    if error.is_builder() {
        // The request could not be built (bad header value, unserialisable body): it was
        // never sent.
        CallResult::NotSent {
            detail: format!("invalid request: {}", root_cause(error)),
        }
    } else if error.is_connect() {
        // Refused, DNS failure, TLS handshake or connect timeout: no request byte was written.
        CallResult::NotSent {
            detail: format!("connect: {}", root_cause(error)),
        }
    } else if error.is_timeout() {
        CallResult::NoAnswer {
            kind: NoAnswerKind::Timeout,
        }
    } else {
        CallResult::NoAnswer {
            kind: NoAnswerKind::Reset,
        }
    }
}

/// Reads a complete answer. A body that cannot be read to the end is `NoAnswer`: the
/// provider answered, but we do not know what it said.
pub(crate) async fn read_answer(response: Response) -> CallResult {
    let status = response.status().as_u16();
    let replayed = header_str(response.headers(), "idempotent-replayed")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let request_id = header_str(response.headers(), "request-id").map(str::to_owned);
    let retry_after = retry_after_of(response.headers());
    let should_retry = should_retry_of(response.headers());
    let body = match read_body(response).await {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        Ok(None) => {
            tracing::warn!(
                status,
                limit = MAX_RESPONSE_BYTES,
                "provider response body too large; not read"
            );
            Value::Null
        }
        Err(error) if error.is_timeout() => {
            return CallResult::NoAnswer {
                kind: NoAnswerKind::Timeout,
            }
        }
        Err(_) => {
            return CallResult::NoAnswer {
                kind: NoAnswerKind::Reset,
            }
        }
    };
    CallResult::Answer(ProviderAnswer {
        status,
        replayed,
        request_id,
        retry_after,
        should_retry,
        body,
    })
}

/// `Stripe-Should-Retry`: `true` or `false` as Stripe writes them; anything else (or no
/// header) says nothing.
fn should_retry_of(headers: &HeaderMap) -> Option<bool> {
    match header_str(headers, "stripe-should-retry")? {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The whole body, or `None` when it exceeds [`MAX_RESPONSE_BYTES`].
pub(crate) async fn read_body(mut response: Response) -> reqwest::Result<Option<Vec<u8>>> {
    if response
        .content_length()
        .is_some_and(|len| len > MAX_RESPONSE_BYTES as u64)
    {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The wait a `Retry-After` header asks for, bounded (`fleet_core::throttle::retry_after`;
/// an HTTP date is read against this host's clock, the only one that can read it).
pub(crate) fn retry_after_of(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .map(|v| fleet_core::throttle::retry_after(v.to_str().ok(), chrono::Utc::now()))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The innermost cause ("Connection refused (os error 111)"), without reqwest's outer
/// message, which repeats the URL.
fn root_cause(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// A short, bounded label of a call result for logs.
pub(crate) fn call_label(call: &CallResult) -> &'static str {
    match call {
        CallResult::NotSent { .. } => "not_sent",
        CallResult::NoAnswer { kind } => kind.as_str(),
        CallResult::Answer(_) => "answer",
    }
}
