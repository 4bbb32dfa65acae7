//! The W3C `traceparent` of every provider API request that carried one, so that a test
//! can check that the fleet's request for an operation joined the agent's trace.
//!
//! | request | answer |
//! |---|---|
//! | `GET /_sim/traces` | `{"data": [{"method", "path", "idempotency_key", "traceparent"}, …]}` in arrival order |
//!
//! Bounded like the request log: past [`MAX_TRACES`] the oldest are forgotten.

use std::collections::VecDeque;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::json;

use crate::state::App;

const MAX_TRACES: usize = 10_000;

#[derive(Clone, Debug, Serialize)]
pub struct SeenTrace {
    pub method: String,
    pub path: String,
    pub idempotency_key: Option<String>,
    pub traceparent: String,
}

#[derive(Debug, Default)]
pub struct TraceLog(VecDeque<SeenTrace>);

impl TraceLog {
    fn record(&mut self, seen: SeenTrace) {
        if self.0.len() >= MAX_TRACES {
            self.0.pop_front();
        }
        self.0.push_back(seen);
    }
}

/// Middleware of the provider API: notes the request's `traceparent`, if any, as sent.
pub async fn note(State(app): State<App>, request: Request, next: Next) -> Response {
    if let Some(seen) = seen(&request) {
        app.lock().traces.record(seen);
    }
    next.run(request).await
}

fn seen(request: &Request) -> Option<SeenTrace> {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    Some(SeenTrace {
        method: request.method().as_str().to_owned(),
        path: request.uri().path().to_owned(),
        idempotency_key: header("idempotency-key"),
        traceparent: header("traceparent")?,
    })
}

pub fn routes() -> Router<App> {
    Router::new().route("/_sim/traces", get(list))
}

async fn list(State(app): State<App>) -> Response {
    let data: Vec<SeenTrace> = app.lock().traces.0.iter().cloned().collect();
    Json(json!({ "data": data })).into_response()
}
