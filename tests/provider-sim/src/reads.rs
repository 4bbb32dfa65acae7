//! The read routes shared by every resource: search by reference (eventually consistent,
//! lagging by `search_lag_ms`) and get by id (strongly consistent).

use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::api_error::ApiError;
use crate::faults::FaultKind;
use crate::reply::Reply;
use crate::resource::Resource;
use crate::route::Route;
use crate::state::App;

pub async fn search<R: Resource>(
    State(app): State<App>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    if let Some(reply) = suffer_fault(&app, R::SEARCH).await {
        return reply.into_response();
    }
    let Some(reference) = query.ok().and_then(|Query(mut q)| q.remove(R::REFERENCE)) else {
        return ApiError::invalid("parameter_missing", R::REFERENCE).into_response();
    };
    let state = app.lock();
    let lag = R::search_lag(&app);
    let visible_until = state.now() - lag;
    // With no lag everything is visible at once, whatever the wall clock does.
    let data: Vec<&R> = R::ledger(&state)
        .with_reference(&reference)
        .filter(|object| lag.is_zero() || object.created_at() <= visible_until)
        .collect();
    Json(json!({ "data": data })).into_response()
}

pub async fn get<R: Resource>(State(app): State<App>, Path(id): Path<String>) -> Response {
    if let Some(reply) = suffer_fault(&app, R::GET).await {
        return reply.into_response();
    }
    let state = app.lock();
    match R::ledger(&state).get(&id) {
        Some(object) => Json(object).into_response(),
        None => ApiError::not_found().into_response(),
    }
}

/// Applies the fault drawn for a read, if any; `Some` is the answer that replaces it.
pub(crate) async fn suffer_fault(app: &App, route: Route) -> Option<Reply> {
    let fault = app.lock().faults.take(route);
    match fault? {
        FaultKind::DropBeforeCommit => Some(Reply::Drop),
        FaultKind::ErrorBeforeCommit(status) => Some(ApiError::simulated(status).into()),
        FaultKind::Delay(delay) => {
            tokio::time::sleep(delay).await;
            None
        }
        // Refused when installed on a read route (faults.rs): a read commits nothing.
        FaultKind::DropAfterCommit
        | FaultKind::ErrorAfterCommit(_)
        | FaultKind::Pending
        | FaultKind::Queued(_) => None,
    }
}
