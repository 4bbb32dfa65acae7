//! `GET /v1/operations/{id}` (optionally waiting for the decision or the end) and
//! `GET /v1/operations` (a tenant-scoped listing with keyset pagination). Every answer is
//! the SQL function `operation_view`'s, unchanged.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use fleet_core::{ApiAction, ApprovalStatus, OperationView, Status, WaitFor};
use fleet_store::{Principal, ViewFilter};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::IntoParams;

use crate::auth::Caller;
use crate::cursor;
use crate::decisions::{locate, Addressed};
use crate::error::ApiError;
use crate::paging;
use crate::problem::Problem;
use crate::query_params::Params;
use crate::request_slots::HeldSlot;
use crate::route_responses::{PostgresSilent, RateLimited, Unauthenticated};
use crate::state::AppState;
use crate::view_schemas::{ApprovalStatusName, OperationPage, StatusName};

/// The longest a request may wait.
pub const MAX_WAIT_S: u64 = 60;
pub const DEFAULT_WAIT_S: u64 = 30;
pub use crate::paging::{DEFAULT_PAGE, MAX_PAGE};

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Hold the request until the approval is decided (`decision`: approved, rejected or
    /// expired) or the operation is final (`final`: succeeded, failed, cancelled,
    /// disputed). Either wait also ends when the operation is escalated to a person, and a
    /// wait for the decision ends when the operation becomes final.
    #[param(value_type = Option<String>, pattern = "^(decision|final)$")]
    wait_for: Option<String>,
    /// The longest to hold the request, in seconds (0 to 60, default 30). When it runs
    /// out the answer is 200 with the current view: look at it, and ask again. Without
    /// `wait_for` nothing is waited for and it has no effect (still read: 0 to 60).
    #[param(value_type = Option<u64>, minimum = 0, maximum = 60)]
    timeout_s: Option<String>,
    /// The operation's tenant. Ids are unique per tenant: needed only when two of the
    /// caller's tenants hold this id (otherwise 409 `operation_id_ambiguous`).
    tenant: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only operations in this status.
    #[param(value_type = Option<StatusName>)]
    status: Option<String>,
    /// Only operations with this approval status (`pending`, `approved`, `rejected`, `expired`).
    #[param(value_type = Option<ApprovalStatusName>)]
    approval_status: Option<String>,
    /// Page size, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// `next_cursor` of the previous page (never empty: leave it out for the first page).
    #[param(value_type = Option<String>, pattern = "^[A-Za-z0-9_-]+$", max_length = 256)]
    cursor: Option<String>,
    /// Only this one of the caller's tenants (a tenant not granted lists nothing, as one
    /// without operations).
    tenant: Option<String>,
}

fn query<T>(q: Result<Params<T>, ApiError>) -> Result<T, ApiError> {
    q.map(|Params(q)| q)
}

/// Read an operation, optionally waiting.
///
/// Operations outside the caller's tenants are not found (404), exactly like operations
/// that do not exist.
#[utoipa::path(
    get,
    path = "/v1/operations/{id}",
    tag = "operations",
    params(("id" = String, Path, description = "The operation id (`op_` + ULID)."), WaitQuery),
    responses(
        (status = 200, description = "The operation: when waiting, once the wait is over or, at the timeout, as it is then.", body = OperationView),
        (status = 400, description = "`invalid_query`: an unknown parameter, `wait_for` not `decision` or `final`, `timeout_s` not a whole number of seconds up to 60.", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        (status = 404, description = "No such operation among the caller's tenants (or in the `tenant` named).", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`operation_id_ambiguous`: two of the caller's tenants hold this id; name one with `tenant`.", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`too_many_waiters`: the caller's principal or tenant holds its share of this process's wait slots, or every slot is taken; `rate_limited`: the principal's request rate is spent. Retry after `Retry-After`.", body = Problem, content_type = "application/problem+json"),
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn get_operation(
    State(state): State<AppState>,
    caller: Caller,
    held: Option<Extension<HeldSlot>>,
    Path(id): Path<String>,
    q: Result<Params<WaitQuery>, ApiError>,
) -> Result<Json<OperationView>, ApiError> {
    caller.may(ApiAction::ReadOperations)?;
    let q = query(q)?;
    let wait_for = match q.wait_for.as_deref() {
        None => None,
        Some(w) => Some(WaitFor::parse(w).ok_or(ApiError::BadQuery {
            field: Some("wait_for".to_owned()),
        })?),
    };
    // A timeout without a wait is taken, not refused: OpenAPI cannot state that one
    // parameter needs another, so refusing it would refuse a request the document allows.
    let timeout_s = match q.timeout_s.as_deref() {
        None => DEFAULT_WAIT_S,
        Some(t) => t
            .parse()
            .ok()
            .filter(|t| *t <= MAX_WAIT_S)
            .ok_or(ApiError::BadQuery {
                field: Some("timeout_s".to_owned()),
            })?,
    };
    let view = read_view(
        &state,
        &caller.0,
        held.as_deref(),
        Addressed::new(&id, q.tenant.as_deref()),
        Wait {
            wait_for,
            timeout: Duration::from_secs(timeout_s),
        },
    )
    .await?;
    Ok(Json(view))
}

/// What a read waits for, and how long at most.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    pub wait_for: Option<WaitFor>,
    pub timeout: Duration,
}

/// The view of the operation `at` names among `caller`'s tenants: at once without `wait_for`; with
/// it, once the wait is over or `timeout` ran out (or the process drains), as it is then.
/// A waiting request takes a wait slot of its principal's and its tenant's shares and
/// gives back its request slot (`held`) while it waits. Shared by this route and the MCP
/// door's `get_operation`.
pub async fn read_view(
    state: &AppState,
    caller: &Principal,
    held: Option<&HeldSlot>,
    at: Addressed<'_>,
    Wait { wait_for, timeout }: Wait,
) -> Result<OperationView, ApiError> {
    let (key, _) = locate(&state.store, &caller.actor(), at).await?;
    let view = state
        .store
        .operation_view(key.op())
        .await?
        .ok_or(ApiError::NotFound)?;
    let Some(wait_for) = wait_for else {
        return Ok(view);
    };
    if fleet_core::wait_is_over(wait_for, view.wait_state()) {
        return Ok(view);
    }
    let tenant = view.tenant_id.as_str();
    let _slot = state.waiters.slot(&caller.name, tenant).map_err(|share| {
        tracing::info!(principal = %caller.name, share = share.as_str(), "a wait refused: its share of the wait slots is taken");
        ApiError::TooManyWaiters
    })?;
    if let Some(held) = held {
        held.release();
    }
    let over = state.waiters.register(key.op(), wait_for);
    tokio::select! {
        _ = over => {}
        _ = tokio::time::sleep(timeout) => {}
        // A draining process answers at once rather than holding its shutdown.
        _ = state.shutdown.cancelled() => {}
    }
    state
        .store
        .operation_view(key.op())
        .await?
        .ok_or(ApiError::NotFound)
}

/// List operations, newest first.
///
/// Only operations of the caller's tenants. Pages are cut by an opaque cursor: pass the
/// `next_cursor` of a page to get the next one; it is `null` on the last page.
#[utoipa::path(
    get,
    path = "/v1/operations",
    tag = "operations",
    params(ListQuery),
    responses(
        (status = 200, description = "One page.", body = OperationPage),
        (status = 400, description = "`invalid_query`: an unknown parameter or status, `limit` outside 1..100, a cursor this API did not hand out; `cursor_invalid`: a cursor handed out for a listing of other tenants.", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn list_operations(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Params<ListQuery>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    caller.may(ApiAction::ReadOperations)?;
    let q = query(q)?;
    let filter = view_filter(q.status.as_deref(), q.approval_status.as_deref())?;
    let limit = paging::limit(q.limit.as_deref())?;
    // Narrowed, never widened: the listing stays within the caller's tenants.
    let tenants: Vec<String> = match q.tenant.as_deref() {
        None => caller.0.tenants.clone(),
        Some(asked) => caller
            .0
            .tenants
            .iter()
            .filter(|t| *t == asked)
            .cloned()
            .collect(),
    };
    if tenants.is_empty() {
        return Ok(Json(json!({"data": [], "next_cursor": null})));
    }
    let page = list_page(&state, &tenants, filter, limit, q.cursor.as_deref()).await?;
    Ok(Json(page))
}

/// The listing's filter from its two optional names; an unknown one is `invalid_query`.
pub fn view_filter(status: Option<&str>, approval: Option<&str>) -> Result<ViewFilter, ApiError> {
    let bad = |field: &str| ApiError::BadQuery {
        field: Some(field.to_owned()),
    };
    Ok(ViewFilter {
        status: status
            .map(|s| Status::parse(s).ok_or(bad("status")))
            .transpose()?,
        approval: approval
            .map(|s| ApprovalStatus::parse(s).ok_or(bad("approval_status")))
            .transpose()?,
    })
}

/// One page (`{"data": […], "next_cursor": …}`) of the operations of `tenants`, newest
/// first, after `cursor`. Shared by this route and the MCP door's `list_operations`.
pub async fn list_page(
    state: &AppState,
    tenants: &[String],
    filter: ViewFilter,
    limit: i64,
    cursor: Option<&str>,
) -> Result<Value, ApiError> {
    let after = cursor
        .map(|c| {
            cursor::decode(c, tenants).map_err(|e| match e {
                cursor::CursorError::Malformed => ApiError::BadQuery {
                    field: Some("cursor".to_owned()),
                },
                cursor::CursorError::OtherTenants => ApiError::CursorInvalid,
            })
        })
        .transpose()?;
    // One row more than asked says whether another page follows.
    let rows = state
        .store
        .operation_views(tenants, filter, after.as_ref(), limit + 1)
        .await?;
    let (rows, next_cursor) = paging::cut(rows, limit, |(_, key)| cursor::encode(key, tenants));
    let data: Vec<OperationView> = rows.into_iter().map(|(view, _)| view).collect();
    Ok(json!({"data": data, "next_cursor": next_cursor}))
}
