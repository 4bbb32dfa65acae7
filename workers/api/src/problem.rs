//! Every error answer of the HTTP API as an RFC 9457 problem (`application/problem+json`):
//! `type` (the code's section of docs/api.md), `title` (fixed per code), `status`,
//! `detail` (fixed per code: it never quotes what was sent), `code`, `field` (the member or
//! query parameter at fault) and `request_id`. Each code's title and detail are read from
//! the one list of codes ([`crate::problem_codes`]).
//!
//! The deprecated member `error` (`{"code", "field"}`, the body before problem details)
//! is still sent, so that clients written against it keep working.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

#[allow(unused_imports)] // named by the schema of `Problem::code`
use crate::contract_enums::ErrorCode;
use crate::problem_codes::kind_of;

/// The media type of a problem.
pub const CONTENT_TYPE: &str = "application/problem+json";

/// Where each code is explained: its section of the API's documentation, as a reference
/// from the repository's root (the same in every deployment, so a client may match on it).
pub const TYPE_BASE: &str = "/docs/api.md#error-";

/// An RFC 9457 problem, as the API sends it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// A reference to the code's section of docs/api.md (`/docs/api.md#error-<code>`), from
    /// the repository's root.
    #[serde(rename = "type")]
    #[schema(example = "/docs/api.md#error-invalid_field", format = "uri-reference")]
    pub type_: String,
    /// A short summary, the same for every answer with this code.
    #[schema(example = "Invalid field")]
    pub title: String,
    /// The HTTP status of this answer.
    #[schema(example = 422, minimum = 100, maximum = 599)]
    pub status: u16,
    /// What went wrong, in words. Never quotes what was sent.
    pub detail: String,
    /// The bounded code to act on.
    #[schema(value_type = ErrorCode)]
    pub code: String,
    /// The member at fault as a dotted path (`payload.amount_minor`), or the query
    /// parameter's name; null when no one member is at fault.
    #[schema(example = "payload.amount_minor")]
    pub field: Option<String>,
    /// The request's id, as in the `X-Request-Id` header and the API's log line.
    #[schema(example = "req_01JQ8R7D9M4KX2T3V4W5Y6Z7A8")]
    pub request_id: Option<String>,
    /// Deprecated: the body before problem details, `{"code", "field"}`; read `code` and
    /// `field` instead.
    #[schema(value_type = Object, deprecated)]
    pub error: Value,
}

impl Problem {
    pub fn new(status: StatusCode, code: &str, field: Option<String>) -> Problem {
        let kind = kind_of(code);
        Problem {
            type_: format!("{TYPE_BASE}{}", kind.code),
            title: kind.title.to_owned(),
            status: status.as_u16(),
            detail: kind.detail.to_owned(),
            code: code.to_owned(),
            error: json!({"code": code, "field": field}),
            field,
            request_id: None,
        }
    }

    /// The answer: `status`, `Content-Type: application/problem+json`, this body, and the
    /// problem itself in the response's extensions, where [`complete`] finds it to add the
    /// request id.
    pub fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body()));
        *response.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        response.extensions_mut().insert(self);
        response
    }

    fn body(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a problem serialises")
    }
}

/// The code of an error answer that no handler of ours made (axum's own 405, a body
/// refused by a layer), by its status.
fn code_of_bare(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "oversized",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::REQUEST_TIMEOUT => "body_timeout",
        StatusCode::TOO_MANY_REQUESTS => "rate_limited",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "role_not_allowed",
        StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST => "malformed",
        s if s.is_server_error() => "unavailable",
        _ => "malformed",
    }
}

/// Finishes an answer of the API: a problem gets the request's id; an error answer made
/// elsewhere (axum's empty 405, say) becomes a problem of its status, its headers (`Allow`)
/// kept. `api` is false for the console's pages and the MCP door, which answer in their
/// own formats.
pub fn complete(response: &mut Response, request_id: &str, api: bool) {
    let problem = match response.extensions_mut().remove::<Problem>() {
        Some(problem) => Some(problem),
        None if api && is_bare_error(response) => Some(Problem::new(
            response.status(),
            code_of_bare(response.status()),
            None,
        )),
        None => None,
    };
    let Some(mut problem) = problem else {
        return;
    };
    problem.request_id = Some(request_id.to_owned());
    let body = problem.body();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    headers.remove(header::CONTENT_LENGTH);
    *response.body_mut() = Body::from(body);
}

/// An error status whose body is not already a problem.
fn is_bare_error(response: &Response) -> bool {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return false;
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    !content_type.starts_with(CONTENT_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_links_its_codes_section_and_keeps_the_old_member() {
        let p = Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            Some("payload.amount_minor".to_owned()),
        );
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["type"], "/docs/api.md#error-invalid_field");
        assert_eq!(v["title"], "Invalid field");
        assert_eq!(v["status"], 422);
        assert_eq!(v["field"], "payload.amount_minor");
        assert_eq!(
            v["error"],
            json!({"code": "invalid_field", "field": "payload.amount_minor"})
        );
    }

    #[test]
    fn a_bare_405_becomes_a_problem_that_keeps_its_allow_header() {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET,HEAD"));
        complete(&mut response, "req_1", true);
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        assert_eq!(response.headers()[header::ALLOW], "GET,HEAD");
        let p = response.extensions().get::<Problem>();
        assert!(p.is_none(), "the extension is consumed");
    }

    #[test]
    fn the_consoles_pages_and_successes_are_left_alone() {
        let mut page = Response::new(Body::from("<html>"));
        *page.status_mut() = StatusCode::NOT_FOUND;
        page.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
        complete(&mut page, "req_1", false);
        assert_eq!(page.headers()[header::CONTENT_TYPE], "text/html");
        let mut ok = Response::new(Body::from("{}"));
        complete(&mut ok, "req_1", true);
        assert!(ok.headers().get(header::CONTENT_TYPE).is_none());
    }
}
