//! A JSON request body: sent as JSON (`application/json`, or a `+json` type; anything else
//! is 415 `unsupported_media_type`, never read as JSON by guess), at most 64 KiB (413
//! `oversized`), and read as the route's type, a refusal naming the member at fault (422
//! `malformed` with `field`, e.g. `payload_hash`). A body that does not arrive within the
//! body deadlines is 408 `body_timeout` ([`crate::body_deadline`]).
//!
//! A route that checks the caller's role reads its body with [`JsonBody::read`] after
//! the check, so a caller refused 403 is refused before any byte of its body is awaited.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap};
use fleet_core::intent::MAX_INTENT_BYTES;
use fleet_runtime::body_deadline::is_too_slow;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The body, read as a `T`.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> JsonBody<T> {
    /// Reads `body`, sent with `headers`, as a `T`.
    pub async fn read(headers: &HeaderMap, body: Body) -> Result<Self, ApiError> {
        require_json(headers)?;
        let bytes = read_bytes(body).await?;
        fleet_core::member_path::read_text(&bytes)
            .map(JsonBody)
            .map_err(|refused| ApiError::Invalid {
                code: "malformed",
                field: refused.and_then(|r| r.path),
            })
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        JsonBody::read(&parts.headers, body).await
    }
}

/// The body's bytes, at most 64 KiB: 413 `oversized` beyond, 408 `body_timeout` when it
/// is late; a client that goes away mid-body is answered 413 too (it reads no answer).
pub async fn read_bytes(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_INTENT_BYTES)
        .await
        .map_err(|e| {
            if is_too_slow(&e) {
                ApiError::BodyTimeout
            } else {
                ApiError::Oversized
            }
        })
}

/// 415 unless the request says its body is JSON.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("application/json") => Ok(()),
        Some(t) if t.starts_with("application/") && t.ends_with("+json") => Ok(()),
        _ => Err(ApiError::UnsupportedMediaType),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(content_type: Option<&'static str>) -> Result<(), ApiError> {
        let mut headers = HeaderMap::new();
        if let Some(t) = content_type {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(t));
        }
        require_json(&headers)
    }

    #[test]
    fn json_and_json_suffixed_types_are_json() {
        for t in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert_eq!(with(Some(t)), Ok(()), "{t}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_415() {
        for t in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("text/json+xml"),
            Some(""),
        ] {
            assert_eq!(with(t), Err(ApiError::UnsupportedMediaType), "{t:?}");
        }
    }
}
