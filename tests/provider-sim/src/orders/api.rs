//! The orders routes under `/v1/orders` (behind the API key).

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::store::{Refused, Transition};
use crate::api_error::ApiError;
use crate::create::MAX_BODY_BYTES;
use crate::faults::FaultKind;
use crate::reads::suffer_fault;
use crate::reply::{after_commit, before_write, Reply};
use crate::route::Route;
use crate::state::App;

pub async fn transition(State(app): State<App>, Path(id): Path<String>, body: Body) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return ApiError::body_too_large().into_response();
    };
    // Spawned, as in create.rs: a client hanging up must not cancel a half-done write.
    match tokio::spawn(handle_transition(app, id, bytes)).await {
        Ok(reply) => reply.into_response(),
        Err(_) => ApiError::internal().into_response(),
    }
}

pub async fn get(State(app): State<App>, Path(id): Path<String>) -> Response {
    if let Some(reply) = suffer_fault(&app, Route::GetOrder).await {
        return reply.into_response();
    }
    match app.lock().orders.get(&id) {
        Some(order) => Json(order).into_response(),
        None => ApiError::not_found().into_response(),
    }
}

async fn handle_transition(app: App, id: String, bytes: Bytes) -> Reply {
    let body = serde_json::from_slice::<Value>(&bytes).ok();
    let transition_ref = body
        .as_ref()
        .and_then(|b| b.get("transition_ref")?.as_str())
        .map(str::to_owned);
    let (seq, fault) = app.arrive(Route::TransitionOrder, None, transition_ref.clone());
    let reply = decide(&app, &id, body, fault).await;
    app.lock()
        .requests
        .finish(seq, reply.logged_status(), false);
    tracing::debug!(
        route = Route::TransitionOrder.as_str(),
        order = id.as_str(),
        transition_ref = transition_ref.as_deref().unwrap_or("-"),
        fault = ?fault,
        status = ?reply.logged_status(),
        "order transition handled"
    );
    reply
}

fn answer(status: StatusCode, body: Value) -> Reply {
    Reply::Answer {
        status,
        body,
        replayed: false,
    }
}

async fn decide(app: &App, id: &str, body: Option<Value>, fault: Option<FaultKind>) -> Reply {
    let transition = match before_write(fault, body, Transition::validate).await {
        Ok(transition) => transition,
        Err(reply) => return reply,
    };
    let committed = {
        let mut state = app.lock();
        let now = state.now();
        match state.orders.transition(id, transition, now) {
            Ok(order) => answer(StatusCode::OK, json!(order)),
            Err(Refused::NotFound) => ApiError::not_found().into(),
            Err(Refused::StatusConflict {
                current_status,
                last_transition_ref,
            }) => answer(
                StatusCode::CONFLICT,
                json!({"error": {"type": "status_conflict", "current_status": current_status, "last_transition_ref": last_transition_ref}}),
            ),
        }
    };
    after_commit(fault, committed)
}
