//! Every request body is read under the deadlines of `API_BODY_TIMEOUT_MS`,
//! `API_BODY_MIN_BYTES_PER_S` and `API_BODY_GRACE_MS` ([`fleet_runtime::body_deadline`]),
//! whoever reads it: the JSON routes, `/mcp` and the console's forms alike. A body that
//! misses them is answered 408 `body_timeout` and its connection is closed, whatever the
//! reader made of the error; a body left unread (the request was refused first) closes
//! its connection too, rather than keeping it open for bytes nobody will read.

use axum::body::HttpBody as _;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use fleet_runtime::{paced, BodyPace};

use crate::error::ApiError;

/// The middleware: the request's body, paced; 408 when it was late.
pub async fn pace_body(State(pace): State<BodyPace>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let empty = body.is_end_stream();
    let (body, watch) = paced(body, pace);
    let mut response = next.run(Request::from_parts(parts, body)).await;
    if watch.late() {
        tracing::info!("a request body did not arrive in time; answering 408");
        response = ApiError::BodyTimeout.into_response();
    }
    if watch.late() || (!empty && !watch.finished()) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
