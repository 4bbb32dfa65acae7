//! The Stripe simulator's HTTP surface: every request under `/v1` is checked for its
//! Bearer key (401), counted against the rate limit (429 with `Stripe-Should-Retry:
//! true`), answered by the state in the account its `Stripe-Account` header names (else
//! the platform's), and logged with its answer.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};

use super::form::decode;
use super::state::{error, rate_limited, unrecognized, Answer, SeenRequest, StripeState};
use crate::reply::DropConnection;

type Shared = Arc<Mutex<StripeState>>;

pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .fallback(handle)
        .layer(axum::extract::DefaultBodyLimit::max(64 * 1024))
        .with_state(state)
}

async fn handle(
    State(state): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let account = headers
        .get("stripe-account")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let params = if method == Method::POST {
        decode(&body)
    } else {
        decode(uri.query().unwrap_or_default().as_bytes())
    };
    let now = Instant::now();
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    let answer = if !path.starts_with("/v1/") {
        unrecognized(method.as_str(), &path)
    } else if !authorized(&headers, state.api_key()) {
        let said = "Invalid API Key provided. You can find your API keys in the Dashboard.";
        error(401, "invalid_request_error", None, said)
    } else if !state.admit(now) {
        rate_limited()
    } else if method == Method::POST {
        state.post(&path, account.as_deref(), key.as_deref(), &params, now)
    } else if method == Method::GET {
        state.get(&path, account.as_deref(), &params, now)
    } else {
        unrecognized(method.as_str(), &path)
    };
    let replayed = matches!(answer, Answer::Json { replayed: true, .. });
    state.log.push(SeenRequest {
        method: method.to_string(),
        path,
        idempotency_key: key,
        account,
        params,
        status: answer.status(),
        replayed,
        at: now,
    });
    drop(state);
    respond(answer)
}

/// `Authorization: Bearer <the key>`, compared whole.
fn authorized(headers: &HeaderMap, key: &str) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| given == key)
}

fn respond(answer: Answer) -> Response {
    match answer {
        Answer::Json {
            status,
            body,
            replayed,
        } => {
            // Stripe asks for a retry of what its rate refused (nothing was executed).
            let limited = status == 429;
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, Json(body)).into_response();
            let headers = response.headers_mut();
            let request_id = format!("req_{}", ulid::Ulid::new());
            if let Ok(id) = HeaderValue::from_str(&request_id) {
                headers.insert("request-id", id);
            }
            if replayed {
                headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
            }
            if limited {
                headers.insert("stripe-should-retry", HeaderValue::from_static("true"));
            }
            response
        }
        Answer::Drop => {
            let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
            response.extensions_mut().insert(DropConnection);
            response
        }
    }
}
