//! The payments API's directory of beneficiaries: who a payment really goes to.
//!
//! | request | answer |
//! |---|---|
//! | `GET /v1/beneficiaries/{id}` | `200 {"id", "name", "country", "account": {"scheme": "iban" \| "local", "masked", "fingerprint": "sha256:…"}, "verified", "version", "created_at", "updated_at"}`, or `404 resource_missing` |
//! | `GET /v1/beneficiaries/{id}?name=…` | the same, with `"name_check": {"result": "match" \| "close_match" \| "no_match" \| "not_possible", "name"?}` for the name given ([`name_check`]) |
//! | `POST /_sim/beneficiaries` `{"id", "name", "country", "account_number", "scheme"?, "verified"?}` | `201` the beneficiary created at version 1, or `200` replaced (its version + 1 when its name, country or account changed); not logged, no fault |
//!
//! The lookup is strongly consistent and suffers the read faults of its route (`GET
//! /v1/beneficiaries/{id}`: `drop_before_commit`, `error_before_commit`, `delay`). The
//! full account number is never answered: `masked` shows its country and last four
//! characters, `fingerprint` is the SHA-256 of the number (spaces removed, upper case),
//! equal for equal accounts. A payment names its beneficiary by id; an id not in the
//! directory is refused `402 invalid_beneficiary`, and a `beneficiary_version` that is not
//! the current one `409 precondition_failed` / `beneficiary_changed` (payments.rs).

mod directory;
mod name_check;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;

pub use directory::Directory;
use directory::{Details, Scheme, Upserted};

use crate::api_error::ApiError;
use crate::reads::suffer_fault;
use crate::route::Route;
use crate::state::App;

/// The lookup answer for `id` in the directory as a simulator starts (before any
/// `POST /_sim/beneficiaries`), or `None` for an id it is not seeded with: what a test
/// needs to rebuild what an approver of a payment to `id` was shown.
pub fn seeded_beneficiary(id: &str) -> Option<serde_json::Value> {
    Directory::seeded(chrono::Utc::now())
        .get(id)
        .map(|b| b.to_json())
}

/// [`seeded_beneficiary`] as a lookup that gave `name` answers it: with its name check.
pub fn seeded_beneficiary_asked(id: &str, name: Option<&str>) -> Option<serde_json::Value> {
    let directory = Directory::seeded(chrono::Utc::now());
    let beneficiary = directory.get(id)?;
    let mut shown = beneficiary.to_json();
    if let Some(name) = name {
        shown["name_check"] = name_check::name_check(&beneficiary.details, name);
    }
    Some(shown)
}

pub fn admin_routes() -> Router<App> {
    Router::new().route("/_sim/beneficiaries", post(upsert))
}

/// `GET /v1/beneficiaries/{id}`, with `?name=` the name check.
pub async fn get(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(query): Query<NameQuery>,
) -> Response {
    if let Some(reply) = suffer_fault(&app, Route::GetBeneficiary).await {
        return reply.into_response();
    }
    let state = app.lock();
    match state.beneficiaries.get(&id) {
        Some(beneficiary) => {
            let mut shown = beneficiary.to_json();
            if let Some(name) = query.name.as_deref() {
                shown["name_check"] = name_check::name_check(&beneficiary.details, name);
            }
            Json(shown).into_response()
        }
        None => ApiError::not_found().into_response(),
    }
}

/// The query of a lookup: the name to check, if any.
#[derive(Debug, Deserialize)]
pub struct NameQuery {
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Upsert {
    id: String,
    name: String,
    country: String,
    account_number: String,
    scheme: Option<String>,
    verified: Option<bool>,
}

async fn upsert(State(app): State<App>, body: Bytes) -> Response {
    let spec: Upsert = match serde_json::from_slice(&body) {
        Ok(spec) => spec,
        Err(_) => return ApiError::invalid_json().into_response(),
    };
    let details = match details(&spec) {
        Ok(details) => details,
        Err(error) => return error.into_response(),
    };
    let mut state = app.lock();
    let now = state.now();
    let status = match state.beneficiaries.upsert(&spec.id, details, now) {
        Upserted::Created => StatusCode::CREATED,
        Upserted::Replaced => StatusCode::OK,
    };
    let shown = state.beneficiaries.get(&spec.id).map(|b| b.to_json());
    (status, Json(shown)).into_response()
}

fn details(spec: &Upsert) -> Result<Details, ApiError> {
    if spec.id.is_empty() || spec.id.chars().count() > 255 {
        return Err(ApiError::invalid("parameter_invalid", "id"));
    }
    if spec.name.is_empty() {
        return Err(ApiError::invalid("parameter_invalid", "name"));
    }
    if spec.country.len() != 2 || !spec.country.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(ApiError::invalid("parameter_invalid", "country"));
    }
    if spec
        .account_number
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .count()
        < 4
    {
        return Err(ApiError::invalid("parameter_invalid", "account_number"));
    }
    let scheme = match spec.scheme.as_deref() {
        None => Scheme::Iban,
        Some(text) => {
            Scheme::parse(text).ok_or_else(|| ApiError::invalid("parameter_invalid", "scheme"))?
        }
    };
    Ok(Details {
        name: spec.name.clone(),
        country: spec.country.clone(),
        scheme,
        // Kept as the bank writes it without spaces, so that `KZ07 999K …` and `KZ07999K…`
        // are one account (and one version).
        account_number: spec
            .account_number
            .chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_uppercase)
            .collect(),
        verified: spec.verified.unwrap_or(true),
    })
}
