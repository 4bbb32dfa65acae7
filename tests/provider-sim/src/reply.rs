//! What a provider route decided to answer, including "nothing at all".
//!
//! Dropping the connection cannot be expressed as an HTTP response, so a route returns a
//! response carrying the `DropConnection` marker and the connection loop in `server.rs`
//! closes the socket instead of writing it.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use crate::api_error::ApiError;
use crate::faults::FaultKind;
use crate::idempotency::SavedResponse;

/// Response extension: close this connection without answering.
#[derive(Clone, Copy, Debug)]
pub struct DropConnection;

#[derive(Debug)]
pub enum Reply {
    Answer {
        status: StatusCode,
        body: Value,
        replayed: bool,
    },
    Drop,
}

impl Reply {
    pub fn answer(saved: SavedResponse) -> Self {
        Reply::Answer {
            status: saved.status,
            body: saved.body,
            replayed: false,
        }
    }

    pub fn replay(saved: SavedResponse) -> Self {
        Reply::Answer {
            status: saved.status,
            body: saved.body,
            replayed: true,
        }
    }

    pub fn error(error: ApiError) -> Self {
        Reply::Answer {
            status: error.status,
            body: error.body(),
            replayed: false,
        }
    }

    /// The status as the request log records it: none when nothing was answered.
    pub fn logged_status(&self) -> Option<u16> {
        match self {
            Reply::Answer { status, .. } => Some(status.as_u16()),
            Reply::Drop => None,
        }
    }

    pub fn is_replay(&self) -> bool {
        matches!(self, Reply::Answer { replayed: true, .. })
    }
}

impl From<ApiError> for Reply {
    fn from(error: ApiError) -> Self {
        Reply::error(error)
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self {
            Reply::Answer {
                status,
                body,
                replayed,
            } => {
                let mut response = (status, Json(body)).into_response();
                if replayed {
                    response
                        .headers_mut()
                        .insert("idempotent-replayed", HeaderValue::from_static("true"));
                }
                response
            }
            Reply::Drop => {
                let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
                response.extensions_mut().insert(DropConnection);
                response
            }
        }
    }
}

/// The answer of a fault that strikes a write without an idempotency key before anything
/// executes.
pub fn before_commit(fault: Option<FaultKind>) -> Option<Reply> {
    match fault? {
        FaultKind::DropBeforeCommit => Some(Reply::Drop),
        FaultKind::ErrorBeforeCommit(status) => Some(ApiError::simulated(status).into()),
        _ => None,
    }
}

/// What the client of such a write gets once it executed: the real answer unless a fault
/// replaces it (the effect stays either way).
pub fn after_commit<T: From<Reply>>(fault: Option<FaultKind>, committed: T) -> T {
    match fault {
        Some(FaultKind::DropAfterCommit) => Reply::Drop.into(),
        Some(FaultKind::ErrorAfterCommit(status)) => {
            Reply::from(ApiError::simulated(status)).into()
        }
        _ => committed,
    }
}

/// The part of a write without an idempotency key before its commit, in the order every
/// such route follows: a fault in front of the provider, the body, its validation (a 400
/// that changes nothing), a `delay` fault. `Err` is the answer when nothing may execute.
pub async fn before_write<T>(
    fault: Option<FaultKind>,
    body: Option<Value>,
    validate: impl FnOnce(&Value) -> Result<T, ApiError>,
) -> Result<T, Reply> {
    if let Some(reply) = before_commit(fault) {
        return Err(reply);
    }
    let body = body.ok_or_else(|| Reply::from(ApiError::invalid_json()))?;
    let valid = validate(&body).map_err(Reply::from)?;
    if let Some(FaultKind::Delay(delay)) = fault {
        tokio::time::sleep(delay).await;
    }
    Ok(valid)
}
