//! Admin helpers for the CRM (no auth, no faults, not in the request log): seeding deals
//! and editing them as "another user" would, so that a test can set the CRM up before
//! the client under test looks.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;

use super::api::deal_response;
use super::store::{DealPatch, NewDeal, PatchRefused, Precondition};
use crate::api_error::ApiError;
use crate::state::App;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/_sim/deals", post(seed))
        .route("/_sim/deals/{id}", get(show).patch(edit))
}

/// `POST /_sim/deals`: creates a deal at once, whatever the asynchronous mode.
async fn seed(State(app): State<App>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return ApiError::invalid_json().into_response();
    };
    let new = match NewDeal::validate(&body) {
        Ok(new) => new,
        Err(error) => return error.into_response(),
    };
    let mut state = app.lock();
    let now = state.now();
    let deal = state.deals.create(new, now);
    deal_response(StatusCode::CREATED, &deal)
}

/// `GET /_sim/deals/{id}`: the deal, strongly consistent, with no fault drawn.
async fn show(State(app): State<App>, Path(id): Path<String>) -> Response {
    let state = app.lock();
    match state.deals.get(&id, state.now()) {
        Some(deal) => deal_response(StatusCode::OK, deal),
        None => ApiError::not_found().into_response(),
    }
}

/// `PATCH /_sim/deals/{id}`: applies the patch unconditionally as a new version.
async fn edit(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return ApiError::invalid_json().into_response();
    };
    let patch = match DealPatch::validate(&body) {
        Ok(patch) => patch,
        Err(error) => return error.into_response(),
    };
    let mut state = app.lock();
    let now = state.now();
    match state.deals.patch(&id, Precondition::None, patch, now) {
        Ok(deal) => deal_response(StatusCode::OK, &deal),
        // An unconditional patch never conflicts.
        Err(PatchRefused::NotFound | PatchRefused::VersionConflict { .. }) => {
            ApiError::not_found().into_response()
        }
    }
}
