//! Every request has an id: the caller's own `X-Request-Id` when it is well formed (1 to
//! 64 ASCII letters, digits, `-`, `_`, `.` and `:`, so that it can neither break a log
//! line nor grow one without bound), otherwise a new one (`req_` + a ULID). It is answered
//! as `X-Request-Id` on every answer, success or not, carried by every problem body, and
//! written on the API's log line of the request, so a caller quoting it finds its request.
//!
//! Every request also belongs to a trace: the caller's W3C `traceparent` when it is well
//! formed (`fleet_core::trace_context`), continued with a span of the API's own, otherwise a
//! new trace; a malformed one is ignored, never refused. The request is handled inside a
//! span carrying its request id and trace and span ids, so every line logged about it,
//! refusals included, carries them; an intent it submits is stored under that trace.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use fleet_core::trace_context;
use fleet_runtime::trace;
use tracing::Instrument;

use crate::problem;

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");
/// The longest id taken from a caller.
pub const MAX_CHARS: usize = 64;

/// The request's id, in its extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl RequestId {
    /// The caller's id when it is well formed, a new one otherwise.
    pub fn of(headers: &HeaderMap) -> RequestId {
        headers
            .get(HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| well_formed(v))
            .map(|v| RequestId(v.to_owned()))
            .unwrap_or_else(|| RequestId(format!("req_{}", ulid::Ulid::new())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn well_formed(id: &str) -> bool {
    (1..=MAX_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// The outermost layer: names the request, and on the way out completes its problem body
/// ([`problem::complete`]) and answers the id.
pub async fn identify(mut request: Request, next: Next) -> Response {
    let id = RequestId::of(request.headers());
    let path = request.uri().path();
    // The console's pages and the MCP door answer in their own formats.
    let api = !(path == "/console" || path.starts_with("/console/") || path == "/mcp");
    let given = request
        .headers()
        .get(trace_context::HEADER)
        .and_then(|v| v.to_str().ok());
    let hop = trace::continue_or_start(given);
    request.extensions_mut().insert(id.clone());
    request.extensions_mut().insert(hop);
    let span = trace::request_span(id.as_str(), &hop);
    let mut response = trace::scoped(hop, next.run(request).instrument(span)).await;
    problem::complete(&mut response, id.as_str(), api);
    if let Ok(value) = HeaderValue::from_str(id.as_str()) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(value: Option<&str>) -> String {
        let mut headers = HeaderMap::new();
        if let Some(v) = value {
            headers.insert(HEADER, HeaderValue::from_str(v).unwrap());
        }
        RequestId::of(&headers).0
    }

    #[test]
    fn a_well_formed_id_is_kept() {
        for id in ["abc", "req_01J", "5f0c-11ee:a.b_c", &"x".repeat(MAX_CHARS)] {
            assert_eq!(of(Some(id)), id);
        }
    }

    #[test]
    fn a_missing_or_ill_formed_id_is_replaced_by_a_new_one() {
        let long = "x".repeat(MAX_CHARS + 1);
        for given in [
            None,
            Some(""),
            Some("a b"),
            Some("a\tb"),
            Some("ü"),
            Some(long.as_str()),
        ] {
            let id = of(given);
            assert!(id.starts_with("req_") && id.len() == 30, "{given:?}: {id}");
        }
        assert_ne!(of(None), of(None));
    }
}
