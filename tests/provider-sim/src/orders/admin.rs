//! Admin helpers for the orders (no auth, no faults, not in the request log): seeding an
//! order and moving it as "another user" would, so a test can set the provider up before
//! the client under test looks.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use crate::api_error::ApiError;
use crate::state::App;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/_sim/orders", post(seed))
        .route("/_sim/orders/{id}", get(show))
        .route("/_sim/orders/{id}/status", post(force))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Seed {
    id: Option<String>,
    status: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Force {
    status: String,
    transition_ref: Option<String>,
}

async fn seed(State(app): State<App>, body: Bytes) -> Response {
    let Ok(seed) = serde_json::from_slice::<Seed>(&body) else {
        return ApiError::invalid_json().into_response();
    };
    let mut state = app.lock();
    let now = state.now();
    if seed
        .id
        .as_deref()
        .is_some_and(|id| state.orders.get(id).is_some())
    {
        return ApiError::invalid("order_exists", "id").into_response();
    }
    (
        StatusCode::CREATED,
        Json(state.orders.create(seed.id, seed.status, now)),
    )
        .into_response()
}

async fn show(State(app): State<App>, Path(id): Path<String>) -> Response {
    match app.lock().orders.get(&id) {
        Some(order) => Json(order).into_response(),
        None => ApiError::not_found().into_response(),
    }
}

async fn force(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Response {
    let Ok(force) = serde_json::from_slice::<Force>(&body) else {
        return ApiError::invalid_json().into_response();
    };
    let transition_ref = force
        .transition_ref
        .unwrap_or_else(|| format!("other_{}", ulid::Ulid::new()));
    let mut state = app.lock();
    let now = state.now();
    match state.orders.force(&id, force.status, transition_ref, now) {
        Some(order) => Json(order).into_response(),
        None => ApiError::not_found().into_response(),
    }
}
