//! The test-only admin API under `/_sim` (no auth): fault injection, effect counters, the
//! request log, the clock, and reset.
//!
//! | request | answer |
//! |---|---|
//! | `POST /_sim/faults` `{"route", "kind", "times"?, "probability"?, "status"?, "delay_ms"?}` | `201` the rule: `{"id": "flt_…", "route", "kind", "times" \| "probability", "status"?, "delay_ms"?}` |
//! | `GET /_sim/faults` | `{"data": [rule, …]}` (`times` = firings left) |
//! | `DELETE /_sim/faults` | `{"cleared": n}` |
//! | `GET /_sim/effects?reference=R` | `{"reference": R, "payments": n, "refunds": m, "deals": d, "orders": o}` (`deals`: with `external_id` R; `orders`: transitions applied with `transition_ref` R; `envelopes`: with `external_ref` R) |
//! | `GET /_sim/effects` | `{"payments": total, "refunds": total, "deals": total, "orders": transitions, "envelopes": total}` |
//! | `GET /_sim/requests[?reference=R]` | `{"data": [{"method", "path", "idempotency_key", "reference", "status", "replayed", "arrived_at"}, …]}` |
//! | `GET /_sim/clock` | `{"now": RFC 3339, "offset_seconds": n}` |
//! | `POST /_sim/clock/advance` `{"seconds": n}` | same as `GET /_sim/clock` |
//! | `GET /_sim/rate_limit` | `{"per_second": n \| null}` |
//! | `POST /_sim/rate_limit` `{"per_second": n \| null}` | the same; every bucket starts full (see rate_limit.rs) |
//! | `POST /_sim/reset` | `204` (the rate limit stays as it was set) |
//! | `GET /_sim/traces` | the `traceparent` of each provider API request that carried one (traces.rs) |
//!
//! `route` is one of `POST /v1/payments`, `GET /v1/payments`, `GET /v1/payments/{id}`, the
//! same three for refunds, `POST /v1/deals`, `GET /v1/deals`, `GET /v1/deals/{id}`,
//! `PATCH /v1/deals/{id}`, `POST /v1/orders/{id}/transitions`, `GET /v1/orders/{id}`, and
//! `POST /v1/envelopes`, `GET /v1/envelopes`, `GET /v1/envelopes/{id}`, and `GET
//! /v1/beneficiaries/{id}`. `kind` is `drop_before_commit`, `drop_after_commit`,
//! `error_before_commit` / `error_after_commit` (with `status`, 400–599), `delay` (with
//! `delay_ms` ≤ 600000), `pending` (payments and refunds creates only) or `queued` (`POST
//! /v1/deals` only, `delay_ms` optional); on read routes only `drop_before_commit`,
//! `error_before_commit` and `delay` are accepted. Deals have no idempotency store: after
//! commit means the deal was created (or queued) or patched, and the client gets the
//! error or the dropped connection instead of the answer; so do order transitions. Without `times` or `probability` a rule
//! fires once. Invalid bodies answer `400 {"error": {"type": "invalid_request", "code",
//! "param"? | "message"?}}`.
//!
//! The request log holds create requests (`POST /v1/…`) and deal patches (`PATCH
//! /v1/deals/{id}`, logged with the deal id as `reference` and path `/v1/deals/{id}`)
//! that passed the API key check, in arrival order; `reference` of a deal create is its
//! `external_id`; `status` is `null` while unanswered and for a dropped connection. The
//! CRM's own admin helpers (`/_sim/deals`) are described in crm.rs, the orders' (`/_sim/orders`)
//! in orders.rs, the directory's (`/_sim/beneficiaries`) in beneficiaries.rs; an order transition is logged with its `transition_ref` as `reference`.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::SecondsFormat;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::json;

use crate::api_error::ApiError;
use crate::faults::FaultSpec;
use crate::state::{seconds, App, SimState};

pub fn routes() -> Router<App> {
    Router::new()
        .route(
            "/_sim/faults",
            post(add_fault).get(list_faults).delete(clear_faults),
        )
        .route("/_sim/effects", get(effects))
        .route("/_sim/requests", get(requests))
        .route("/_sim/clock", get(clock))
        .route("/_sim/clock/advance", post(advance_clock))
        .route("/_sim/rate_limit", get(rate_limit).post(set_rate_limit))
        .route("/_sim/reset", post(reset))
}

#[derive(Debug, Deserialize)]
struct ReferenceQuery {
    reference: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimit {
    per_second: Option<u32>,
}

async fn rate_limit(State(app): State<App>) -> Response {
    Json(json!({"per_second": app.lock().rate_limits.per_second})).into_response()
}

async fn set_rate_limit(State(app): State<App>, body: Bytes) -> Response {
    let asked: RateLimit = match parse(&body) {
        Ok(asked) => asked,
        Err(unparsable) => return unparsable.into_response(),
    };
    let mut state = app.lock();
    state.rate_limits.set(asked.per_second);
    Json(json!({"per_second": state.rate_limits.per_second})).into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    seconds: u64,
}

async fn add_fault(State(app): State<App>, body: Bytes) -> Response {
    let spec = match parse::<FaultSpec>(&body) {
        Ok(spec) => spec,
        Err(unparsable) => return unparsable.into_response(),
    };
    let added = app.lock().faults.add(spec);
    match added {
        Ok(description) => (StatusCode::CREATED, Json(description)).into_response(),
        Err(error) => error.into_response(),
    }
}

async fn list_faults(State(app): State<App>) -> Response {
    Json(json!({ "data": app.lock().faults.describe() })).into_response()
}

async fn clear_faults(State(app): State<App>) -> Response {
    Json(json!({ "cleared": app.lock().faults.clear() })).into_response()
}

async fn effects(State(app): State<App>, Query(query): Query<ReferenceQuery>) -> Response {
    let state = app.lock();
    let now = state.now();
    let body = match query.reference {
        Some(reference) => json!({
            "payments": state.payments.count_with_reference(&reference),
            "refunds": state.refunds.count_with_reference(&reference),
            "deals": state.deals.count_with_external_id(&reference, now),
            "orders": state.orders.count_with_ref(&reference),
            "envelopes": state.envelopes.count_with_reference(&reference),
            "reference": reference,
        }),
        None => json!({
            "payments": state.payments.len(),
            "refunds": state.refunds.len(),
            "deals": state.deals.count(now),
            "orders": state.orders.count(),
            "envelopes": state.envelopes.len(),
        }),
    };
    Json(body).into_response()
}

async fn requests(State(app): State<App>, Query(query): Query<ReferenceQuery>) -> Response {
    let data = app.lock().requests.matching(query.reference.as_deref());
    Json(json!({ "data": data })).into_response()
}

async fn clock(State(app): State<App>) -> Response {
    Json(describe_clock(&app.lock())).into_response()
}

async fn advance_clock(State(app): State<App>, body: Bytes) -> Response {
    let advance = match parse::<Advance>(&body) {
        Ok(advance) => advance,
        Err(unparsable) => return unparsable.into_response(),
    };
    let Ok(by) = seconds(advance.seconds) else {
        return ApiError::invalid("parameter_invalid", "seconds").into_response();
    };
    let mut state = app.lock();
    state.advance_clock(by);
    Json(describe_clock(&state)).into_response()
}

async fn reset(State(app): State<App>) -> StatusCode {
    app.lock().reset();
    StatusCode::NO_CONTENT
}

fn describe_clock(state: &SimState) -> serde_json::Value {
    json!({
        "now": state.now().to_rfc3339_opts(SecondsFormat::Millis, true),
        "offset_seconds": state.clock_offset().num_seconds(),
    })
}

/// An admin body that did not parse; answered as a 400 that says what was wrong, since
/// admin callers are test authors, who need the reason more than a stable code.
struct Unparsable(serde_json::Error);

impl IntoResponse for Unparsable {
    fn into_response(self) -> Response {
        let body = json!({"error": {"type": "invalid_request", "code": "invalid_json",
                                    "message": self.0.to_string()}});
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    }
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, Unparsable> {
    serde_json::from_slice(body).map_err(Unparsable)
}
