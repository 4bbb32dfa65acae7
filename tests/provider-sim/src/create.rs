//! The create flow shared by every resource: log, fault, key, validate, execute, save.
//!
//! Order of decisions for a request (each step may end it):
//! 1. it is logged and its fault, if any, is drawn;
//! 2. `drop_before_commit` / `error_before_commit` end it with no trace under the key;
//! 3. a missing key, a body that is not JSON, or a validation failure: 400, not saved;
//! 4. the key: in flight → 409, other parameters → 400 reused, saved → replay;
//! 5. a `delay` fault sleeps with the key in flight;
//! 6. execution: the object (201) or a business rejection (402), saved under the key —
//!    replaced by the fault's status for `error_after_commit`, and not sent at all for
//!    `drop_after_commit`.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::api_error::ApiError;
use crate::faults::FaultKind;
use crate::idempotency::{fingerprint, Begin, SavedResponse};
use crate::ledger::ObjectStatus;
use crate::reply::Reply;
use crate::resource::{NewObject, Resource};
use crate::state::App;

/// Largest accepted request body (fleet bounds an intent at 64 KiB too).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Longest accepted idempotency key, as Stripe.
const MAX_KEY_CHARS: usize = 255;

pub async fn create<R: Resource>(
    State(app): State<App>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // Any read failure is reported as too large: the only other cause is a client that
    // went away, which will not read the answer anyway.
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return ApiError::body_too_large().into_response();
    };
    let key = idempotency_key(&headers);
    // Spawned so that a client hanging up (which drops this handler's future) cannot
    // cancel an execution half-way and leave its key in flight forever: like a real
    // provider, the simulator finishes what it started.
    match tokio::spawn(handle::<R>(app, key, bytes)).await {
        Ok(reply) => reply.into_response(),
        Err(_) => ApiError::internal().into_response(),
    }
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key) if !key.is_empty() && key.chars().count() <= MAX_KEY_CHARS => {
            Ok(Some(key.to_owned()))
        }
        _ => Err(ApiError::key_invalid()),
    }
}

async fn handle<R: Resource>(
    app: App,
    key: Result<Option<String>, ApiError>,
    bytes: Bytes,
) -> Reply {
    let body = serde_json::from_slice::<Value>(&bytes).ok();
    let reference = body
        .as_ref()
        .and_then(|b| b.get(R::REFERENCE)?.as_str())
        .map(str::to_owned);
    let logged_key = key.as_ref().ok().and_then(Option::clone);
    let (seq, fault) = app.arrive(R::CREATE, logged_key, reference.clone());

    let reply = decide::<R>(&app, key, body, fault).await;

    app.lock()
        .requests
        .finish(seq, reply.logged_status(), reply.is_replay());
    tracing::debug!(
        route = R::CREATE.as_str(),
        reference = reference.as_deref().unwrap_or("-"),
        fault = ?fault,
        status = ?reply.logged_status(),
        replayed = reply.is_replay(),
        "create request handled"
    );
    reply
}

async fn decide<R: Resource>(
    app: &App,
    key: Result<Option<String>, ApiError>,
    body: Option<Value>,
    fault: Option<FaultKind>,
) -> Reply {
    match fault {
        Some(FaultKind::DropBeforeCommit) => return Reply::Drop,
        Some(FaultKind::ErrorBeforeCommit(status)) => return ApiError::simulated(status).into(),
        Some(
            FaultKind::DropAfterCommit
            | FaultKind::ErrorAfterCommit(_)
            | FaultKind::Delay(_)
            | FaultKind::Pending
            // Refused when installed on a payments or refunds route (faults.rs).
            | FaultKind::Queued(_),
        )
        | None => {}
    }
    let key = match key {
        Ok(Some(key)) => key,
        Ok(None) => return ApiError::key_required().into(),
        Err(error) => return error.into(),
    };
    let Some(body) = body else {
        return ApiError::invalid_json().into();
    };
    let params = match begin::<R>(app, &key, &body) {
        Ok(params) => params,
        Err(reply) => return reply,
    };
    if let Some(FaultKind::Delay(delay)) = fault {
        tokio::time::sleep(delay).await;
    }
    commit::<R>(app, &key, params, fault)
}

/// Validates and claims the key; `Err` is the answer when execution must not happen.
fn begin<R: Resource>(app: &App, key: &str, body: &Value) -> Result<R::Params, Reply> {
    let mut state = app.lock();
    let params = R::validate(body, &state).map_err(Reply::error)?;
    let now = state.now();
    match R::keys(&mut state).begin(key, fingerprint(R::CREATE.as_str(), body), now) {
        Begin::Execute => Ok(params),
        Begin::Replay(saved) => Err(Reply::replay(saved)),
        Begin::InUse => Err(ApiError::key_in_use().into()),
        Begin::Reused => Err(ApiError::key_reused().into()),
    }
}

/// Executes, records the effect, and saves the response under the key, in one section
/// so that an effect without a saved response is never observable.
fn commit<R: Resource>(app: &App, key: &str, params: R::Params, fault: Option<FaultKind>) -> Reply {
    let mut state = app.lock();
    let status = if fault == Some(FaultKind::Pending) {
        ObjectStatus::Pending
    } else {
        app.default_status()
    };
    let new = NewObject {
        status,
        created_at: state.now(),
    };
    let executed = R::execute(params, &state, new).and_then(|object| {
        let body = serde_json::to_value(&object).map_err(|_| ApiError::internal())?;
        Ok((object, body))
    });
    let mut saved = match executed {
        Ok((object, body)) => {
            R::committed(app, &object);
            R::ledger_mut(&mut state).insert(object);
            SavedResponse {
                status: StatusCode::CREATED,
                body,
            }
        }
        Err(rejection) => SavedResponse {
            status: rejection.status,
            body: rejection.body(),
        },
    };
    if let Some(FaultKind::ErrorAfterCommit(status)) = fault {
        saved = SavedResponse {
            status,
            body: ApiError::simulated(status).body(),
        };
    }
    R::keys(&mut state).complete(key, saved.clone());
    if fault == Some(FaultKind::DropAfterCommit) {
        Reply::Drop
    } else {
        Reply::answer(saved)
    }
}
