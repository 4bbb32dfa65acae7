//! The CRM routes under `/v1/deals` (behind the API key, like the payments API).
//!
//! Writes (`POST /v1/deals`, `PATCH /v1/deals/{id}`) follow the order of `create.rs`
//! without its idempotency key: logged and fault drawn on arrival; `drop_before_commit`
//! / `error_before_commit` end it with no effect; validation (400); a `delay` fault
//! sleeps; the effect is committed; `error_after_commit` replaces the answer and
//! `drop_after_commit` closes the connection instead of answering. Nothing is saved for
//! a replay: the CRM has no idempotency keys, so a repeated POST is a second deal.

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::header::{ETAG, IF_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::TimeDelta;
use serde::Deserialize;
use serde_json::{json, Value};

use super::store::{Deal, DealPatch, NewDeal, PatchRefused, Precondition};
use crate::api_error::ApiError;
use crate::create::MAX_BODY_BYTES;
use crate::faults::FaultKind;
use crate::reads::suffer_fault;
use crate::reply::{after_commit, before_commit, before_write, Reply};
use crate::route::Route;
use crate::state::App;

/// What a write decided to answer: a deal (with its `ETag`) or any other reply.
#[derive(Debug)]
enum Outcome {
    Deal(StatusCode, Deal),
    Reply(Reply),
}

impl Outcome {
    fn logged_status(&self) -> Option<u16> {
        match self {
            Outcome::Deal(status, _) => Some(status.as_u16()),
            Outcome::Reply(reply) => reply.logged_status(),
        }
    }

    fn queued() -> Self {
        Outcome::Reply(Reply::Answer {
            status: StatusCode::ACCEPTED,
            body: json!({"status": "queued"}),
            replayed: false,
        })
    }

    fn version_conflict(current_version: u64) -> Self {
        Outcome::Reply(Reply::Answer {
            status: StatusCode::PRECONDITION_FAILED,
            body: json!({"error": {"type": "version_conflict",
                                   "current_version": current_version}}),
            replayed: false,
        })
    }
}

impl From<ApiError> for Outcome {
    fn from(error: ApiError) -> Self {
        Outcome::Reply(error.into())
    }
}

impl From<Reply> for Outcome {
    fn from(reply: Reply) -> Self {
        Outcome::Reply(reply)
    }
}

impl IntoResponse for Outcome {
    fn into_response(self) -> Response {
        match self {
            Outcome::Deal(status, deal) => deal_response(status, &deal),
            Outcome::Reply(reply) => reply.into_response(),
        }
    }
}

/// A deal as JSON with its version as a strong `ETag`.
pub(super) fn deal_response(status: StatusCode, deal: &Deal) -> Response {
    let mut response = (status, Json(deal)).into_response();
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", deal.version)) {
        response.headers_mut().insert(ETAG, etag);
    }
    response
}

pub async fn create(State(app): State<App>, body: Body) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return ApiError::body_too_large().into_response();
    };
    // Spawned, as in create.rs: a client hanging up must not cancel a half-done write.
    match tokio::spawn(handle_create(app, bytes)).await {
        Ok(outcome) => outcome.into_response(),
        Err(_) => ApiError::internal().into_response(),
    }
}

pub async fn patch(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return ApiError::body_too_large().into_response();
    };
    let precondition = precondition(&headers);
    match tokio::spawn(handle_patch(app, id, precondition, bytes)).await {
        Ok(outcome) => outcome.into_response(),
        Err(_) => ApiError::internal().into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    external_id: Option<String>,
}

pub async fn search(
    State(app): State<App>,
    query: Result<Query<SearchQuery>, QueryRejection>,
) -> Response {
    if let Some(reply) = suffer_fault(&app, Route::SearchDeals).await {
        return reply.into_response();
    }
    let Some(external_id) = query.ok().and_then(|Query(q)| q.external_id) else {
        return ApiError::invalid("parameter_missing", "external_id").into_response();
    };
    let state = app.lock();
    let data: Vec<&Deal> = state.deals.search(&external_id, state.now()).collect();
    Json(json!({ "data": data })).into_response()
}

pub async fn get(State(app): State<App>, Path(id): Path<String>) -> Response {
    if let Some(reply) = suffer_fault(&app, Route::GetDeal).await {
        return reply.into_response();
    }
    let state = app.lock();
    match state.deals.get(&id, state.now()) {
        Some(deal) => deal_response(StatusCode::OK, deal),
        None => ApiError::not_found().into_response(),
    }
}

/// `If-Match: "<version>"` (a strong ETag as `GET` sends it); `*` or no header at all
/// means unconditional.
fn precondition(headers: &HeaderMap) -> Result<Precondition, ApiError> {
    let Some(value) = headers.get(IF_MATCH) else {
        return Ok(Precondition::None);
    };
    let invalid = || ApiError::invalid("if_match_invalid", "If-Match");
    let text = value.to_str().map_err(|_| invalid())?.trim();
    if text == "*" {
        return Ok(Precondition::None);
    }
    text.strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse().ok())
        .map(Precondition::Version)
        .ok_or_else(invalid)
}

async fn handle_create(app: App, bytes: Bytes) -> Outcome {
    let body = serde_json::from_slice::<Value>(&bytes).ok();
    let external_id = body
        .as_ref()
        .and_then(|b| b.get("external_id")?.as_str())
        .map(str::to_owned);
    let (seq, fault) = app.arrive(Route::CreateDeal, None, external_id.clone());

    let outcome = decide_create(&app, body, fault).await;

    app.lock()
        .requests
        .finish(seq, outcome.logged_status(), false);
    tracing::debug!(
        route = Route::CreateDeal.as_str(),
        external_id = external_id.as_deref().unwrap_or("-"),
        fault = ?fault,
        status = ?outcome.logged_status(),
        "deal create handled"
    );
    outcome
}

async fn decide_create(app: &App, body: Option<Value>, fault: Option<FaultKind>) -> Outcome {
    let new = match before_write(fault, body, NewDeal::validate).await {
        Ok(new) => new,
        Err(reply) => return reply.into(),
    };
    let committed = {
        let mut state = app.lock();
        let now = state.now();
        let settings = state.deals.settings();
        let queued_for = match fault {
            Some(FaultKind::Queued(Some(delay))) => {
                Some(TimeDelta::from_std(delay).unwrap_or(settings.async_delay))
            }
            Some(FaultKind::Queued(None)) => Some(settings.async_delay),
            _ if settings.async_create => Some(settings.async_delay),
            _ => None,
        };
        match queued_for {
            Some(after) => {
                state.deals.enqueue(new, now + after);
                Outcome::queued()
            }
            None => Outcome::Deal(StatusCode::CREATED, state.deals.create(new, now)),
        }
    };
    after_commit(fault, committed)
}

async fn handle_patch(
    app: App,
    id: String,
    precondition: Result<Precondition, ApiError>,
    bytes: Bytes,
) -> Outcome {
    // The body has no external id: the deal id is what the log is searched by.
    let (seq, fault) = app.arrive(Route::PatchDeal, None, Some(id.clone()));

    let outcome = decide_patch(&app, &id, precondition, &bytes, fault).await;

    app.lock()
        .requests
        .finish(seq, outcome.logged_status(), false);
    tracing::debug!(
        route = Route::PatchDeal.as_str(),
        deal = id.as_str(),
        fault = ?fault,
        status = ?outcome.logged_status(),
        "deal patch handled"
    );
    outcome
}

async fn decide_patch(
    app: &App,
    id: &str,
    precondition: Result<Precondition, ApiError>,
    bytes: &[u8],
    fault: Option<FaultKind>,
) -> Outcome {
    if let Some(reply) = before_commit(fault) {
        return reply.into();
    }
    let precondition = match precondition {
        Ok(precondition) => precondition,
        Err(error) => return error.into(),
    };
    let Ok(body) = serde_json::from_slice::<Value>(bytes) else {
        return ApiError::invalid_json().into();
    };
    let patch = match DealPatch::validate(&body) {
        Ok(patch) => patch,
        Err(error) => return error.into(),
    };
    if let Some(FaultKind::Delay(delay)) = fault {
        tokio::time::sleep(delay).await;
    }
    let committed = {
        let mut state = app.lock();
        let now = state.now();
        match state.deals.patch(id, precondition, patch, now) {
            Ok(deal) => Outcome::Deal(StatusCode::OK, deal),
            Err(PatchRefused::NotFound) => ApiError::not_found().into(),
            Err(PatchRefused::VersionConflict { current_version }) => {
                Outcome::version_conflict(current_version)
            }
        }
    };
    after_commit(fault, committed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_if_match(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(IF_MATCH, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn if_match_takes_a_quoted_version_or_a_star() {
        assert_eq!(precondition(&HeaderMap::new()), Ok(Precondition::None));
        assert_eq!(
            precondition(&with_if_match("\"3\"")),
            Ok(Precondition::Version(3))
        );
        assert_eq!(precondition(&with_if_match("*")), Ok(Precondition::None));
        for bad in ["3", "W/\"3\"", "\"\"", "\"x\"", "\"-1\""] {
            assert_eq!(
                precondition(&with_if_match(bad)).unwrap_err().code,
                "if_match_invalid",
                "{bad}"
            );
        }
    }
}
