//! The `/v1` gate: bearer API key check, and a `Request-Id` on every answer.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api_error::ApiError;
use crate::state::App;

pub async fn require_api_key(State(app): State<App>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    let mut response = match presented {
        Some(key) if constant_time_eq(key.as_bytes(), app.api_key().as_bytes()) => {
            next.run(request).await
        }
        Some(_) | None => ApiError::unauthorized().into_response(),
    };
    if let Ok(id) = HeaderValue::from_str(&format!("req_{}", ulid::Ulid::new())) {
        response.headers_mut().insert("request-id", id);
    }
    response
}

// Constant time in the key's content, so that the simulator is not a worse example than
// the services it stands in for.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn compares_whole_keys() {
        assert!(constant_time_eq(b"sk_test_sim", b"sk_test_sim"));
        assert!(!constant_time_eq(b"sk_test_sim", b"sk_test_six"));
        assert!(!constant_time_eq(b"sk_test_sim", b"sk_test_si"));
    }
}
