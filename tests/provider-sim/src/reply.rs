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
