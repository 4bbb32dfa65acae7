//! `POST /v1/intents`: an intent.v1 validated and written by the prepare worker's own
//! intake functions (so the API and the queue accept, refuse and store exactly alike),
//! answered synchronously with the operation's view.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use fleet_core::{authz, supersede, ApiAction, OpRef, OperationView, ValidIntent};
use fleet_intake::intake::{self, WriteError, Written};
use fleet_intake::{Intake, Refusal};
use fleet_runtime::trace;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::json_body::{read_bytes, require_json};
use crate::problem::Problem;
use crate::route_responses::{NotJson, RateLimited, Unauthenticated};
use crate::schemas::IntentV1;
use crate::state::AppState;

/// Submit an intent.
///
/// Validated exactly as the `intents.prepare` queue validates it (the same code), then
/// stored as a pending-approval operation recorded as submitted by the caller. The same
/// intent again is a no-op answered 200; the same `operation_id` with another snapshot is
/// refused (409) and the stored operation is untouched. An intent with `supersedes`
/// replaces only an operation the caller itself submitted (403 `supersedes_forbidden`
/// otherwise; the named operation is untouched).
#[utoipa::path(
    post,
    path = "/v1/intents",
    tag = "intents",
    request_body(content = IntentV1, content_type = "application/json", description = "An intent.v1 message, at most 64 KiB."),
    responses(
        (status = 202, description = "Stored; approval pending.", body = OperationView,
         headers(("Location" = String, description = "/v1/operations/{operation_id}"))),
        (status = 200, description = "The same intent was stored before; its current view.", body = OperationView,
         headers(("Location" = String, description = "/v1/operations/{operation_id}"))),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed` (only agents submit), `tenant_not_granted`, or `supersedes_forbidden` (`supersedes` names an operation of the tenant that another principal submitted, or that came through the queue: only its submitter replaces it); nothing is written.", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "`body_timeout`: the body did not arrive in time (`API_BODY_TIMEOUT_MS`, 10 s; and after `API_BODY_GRACE_MS`, 2 s, no slower than `API_BODY_MIN_BYTES_PER_S`, 1 KiB/s); the connection is closed.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`operation_id_conflict`: the id names another snapshot.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`oversized`: more than 64 KiB.", body = Problem, content_type = "application/problem+json"),
        NotJson,
        (status = 422, description = "The intent breaks the contract; `code` is the reason the queue would dead-letter it with (`malformed`, `unsupported_schema`, `unknown_action`, `invalid_field`, `unsupported_provider`, `unknown_policy`, `policy_not_in_force`, `currency_not_banded`, `payee_unknown`, `payee_name_unconfirmed` (the payee's name is not confirmed as the account holder's and the policy refuses that result), `object_of_other_tenant` (it names an object the fleet made or changed for another tenant), `object_unknown`, `supersedes_unknown_operation` (also for another tenant's operation), `supersedes_executed`, …) and `field` the offending field.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        (status = 503, description = "Nothing was decided or stored; send the same intent again after `Retry-After`: `unavailable` (Postgres did not answer), or `payee_directory_unavailable` (the provider's directory gave no answer about the payee: rate-limited, failing or out of reach; only its 404 is `payee_unknown`).", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn submit_intent(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    caller.may(ApiAction::SubmitIntent)?;
    require_json(&headers)?;
    let bytes = read_bytes(body).await?;
    let (created, view) = accept(&state, &caller, &bytes).await?;
    let status = if created {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    let location = HeaderValue::from_str(&format!("/v1/operations/{}", view.operation_id))
        .map_err(|_| ApiError::Unavailable)?;
    Ok((status, [(header::LOCATION, location)], Json(view)).into_response())
}

/// Takes in one intent.v1 from `caller` (a body, or the MCP door's proposal): validated
/// and written by the prepare worker's intake, then read back. Answers whether it was
/// stored now (`false`: the same intent was stored before) and the operation's view.
pub async fn accept(
    state: &AppState,
    caller: &Caller,
    bytes: &[u8],
) -> Result<(bool, OperationView), ApiError> {
    // Stored under the trace of the request (or the MCP call) that submitted it.
    let checked = intake::validate(bytes, &state.intake)
        .map_err(invalid)?
        .traced(trace::at_intake());
    let intent = &checked.intent;
    trace::record_operation(intent.operation_id.as_str());
    if let Err(denial) = authz::may_submit(&caller.0.actor(), &intent.snapshot.tenant_id) {
        tracing::warn!(principal = %caller.0.name, operation_id = intent.operation_id.as_str(), reason = denial.code(), "intent refused");
        return Err(denial.into());
    }
    // Looked up only for a caller who may submit it: a lookup is a call to the provider.
    let written = match intake::against_world(checked, &state.intake, &state.store).await {
        Ok(checked) => Ok(checked),
        Err(Intake::AlreadyPrepared(intent)) => Err(intent),
        Err(Intake::Refused(r)) => return Err(invalid(r)),
        Err(Intake::Unavailable(e)) => return Err(e.into()),
        // Nothing is known about the payee: nothing is stored, and the caller asks again.
        Err(Intake::DirectoryUnreachable) => return Err(ApiError::DirectoryUnavailable),
        Err(Intake::Prepared(_)) => return Err(ApiError::Unavailable),
    };
    let checked = match written {
        Ok(checked) => checked,
        // A resend of a stored snapshot: answered as one, whatever the world says now.
        Err(intent) => return Ok((false, view_of(state, &intent).await?)),
    };
    let intent = &checked.intent;
    let created = match intake::write(&state.store, &checked, Some(&caller.0.name)).await {
        Ok(Written::Inserted) => true,
        Ok(Written::AlreadyPrepared) => false,
        Err(WriteError::Conflict) => return Err(ApiError::Conflict),
        Err(WriteError::Refused(r)) if r.reason == supersede::FORBIDDEN => {
            // Not about the intent's content: the caller may not replace that operation.
            return Err(ApiError::Forbidden(supersede::FORBIDDEN));
        }
        Err(WriteError::Refused(r)) => return Err(invalid(r)),
        Err(WriteError::Store(e)) => return Err(e.into()),
        Err(WriteError::DirectoryUnreachable) => return Err(ApiError::DirectoryUnavailable),
    };
    Ok((created, view_of(state, intent).await?))
}

/// The view of the operation `intent` was stored as; it was just written, so missing
/// means Postgres is not answering as it should.
async fn view_of(state: &AppState, intent: &ValidIntent) -> Result<OperationView, ApiError> {
    state
        .store
        .operation_view(OpRef::new(
            &intent.snapshot.tenant_id,
            intent.operation_id.as_str(),
        ))
        .await?
        .ok_or(ApiError::Unavailable)
}

/// The intake's refusal, as the API answers it (422 with the dead-letter reason).
pub fn invalid(refusal: Refusal) -> ApiError {
    ApiError::Invalid {
        code: refusal.reason,
        field: refusal.field,
    }
}
