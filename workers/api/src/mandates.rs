//! Standing mandates over HTTP: `POST /v1/mandates` (an approver stores a mandate it
//! signed), `GET /v1/mandates` and `/v1/mandates/{id}` (what is granted and what is left:
//! an agent asks whether it is covered), `POST /v1/mandates/{id}/revoke` (its signer or an
//! admin), and `POST /v1/operations/{id}/approvals/revoke` (an approver takes back its
//! approval of an operation not yet claimed, or an admin takes back anyone's).
//!
//! The signature is verified here, over the statement's canonical bytes, with the
//! caller's own registered key; the database then stores what was signed with the limits
//! read from the statement itself, and execute verifies the signature again before any
//! call it approves (`fleet_core::mandate`, migrations/0061_mandates.sql).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use fleet_core::mandate::Mandate;
use fleet_core::{ApiAction, KeyId, OpRef, Role, Signature};
use fleet_store::{MandateCreated, MandateRow, Principal};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::answer_schemas::{MandateList, MandateView};
use crate::auth::Caller;
use crate::decisions::{locate, Addressed};
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::problem::Problem;
use crate::route_responses::{
    BodyTooLarge, NotJson, NothingDecided, PostgresSilent, RateLimited, Unauthenticated,
};
use crate::state::AppState;
use crate::view_schemas::OperationView;

/// The most pending operations rung for when a mandate is stored; the rest wait for
/// reconcile's sweeper or their next doorbell.
const RING_AT_MOST: i32 = 1000;

/// A mandate signed by the caller.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MandateBody {
    /// The `fleet.mandate.v1` statement, as signed (docs/mandates.md).
    #[schema(value_type = Object)]
    pub statement: Value,
    /// The caller's registered key that signed it (`ed25519:` or `passkey:` + 32 hex
    /// digits).
    pub key_id: String,
    /// The signature of the statement's RFC 8785 canonical bytes, unpadded base64url: 64
    /// Ed25519 bytes, or a passkey's assertion in its stored form (`fleet_core::passkey`)
    /// whose challenge is the SHA-256 of those bytes.
    pub signature: String,
}

/// Whose approval to revoke: the caller's own (approvers), or, for an admin, the
/// principal named.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeApprovalBody {
    /// The approver whose approval is revoked; an approver may name only itself (or
    /// leave it out).
    pub principal: Option<String>,
}

fn invalid(field: String) -> ApiError {
    ApiError::Invalid {
        code: "invalid_field",
        field: Some(field),
    }
}

/// Store a signed standing mandate.
///
/// An approver of the mandate's tenant stores a mandate it signed with its registered
/// key. Answers 201 with the mandate's standing (200 when this same statement was stored
/// before). Pending operations it covers are rung for execute, which approves them by the
/// mandate at claim, within its limits.
#[utoipa::path(
    post,
    path = "/v1/mandates",
    tag = "mandates",
    request_body(content = MandateBody, content_type = "application/json"),
    responses(
        (status = 201, description = "Stored: the mandate and what is left of it.", body = MandateView),
        (status = 200, description = "This same statement was stored before: the mandate as it is.", body = MandateView),
        (status = 400, description = "`signature_invalid`: `key_id` (unknown, not the caller's, removed) or `signature` (does not verify over the statement).", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed` (only approvers sign mandates), `tenant_not_granted`, or `not_recorded_approver`.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        (status = 422, description = "`malformed`, or `invalid_field` naming the statement's member at fault (`statement.mandate_id` also when the id names another statement).", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        NothingDecided,
    ),
    security(("bearer" = []))
)]
pub async fn create_mandate(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    caller.may(ApiAction::Approve)?;
    let JsonBody(b): JsonBody<MandateBody> = JsonBody::read(&headers, body).await?;
    store(&state, &caller.0, &b)
        .await
        .map(|(status, view)| (status, Json(view)))
}

/// Stores the mandate `b` signed by `principal` (an Ed25519 signature, or a passkey's
/// assertion whose challenge is the statement's hash: the registered key says which):
/// the route's work, and the console's, whose caller checked the role first. Answers
/// what the route answers.
pub(crate) async fn store(
    state: &AppState,
    principal: &Principal,
    b: &MandateBody,
) -> Result<(StatusCode, Value), ApiError> {
    let mandate =
        Mandate::from_json(&b.statement).map_err(|p| invalid(format!("statement.{}", p.field)))?;
    if !principal.tenants.contains(&mandate.tenant_id) {
        return Err(ApiError::Forbidden("tenant_not_granted"));
    }
    let key_id = KeyId::parse(&b.key_id).ok_or(ApiError::BadSignature { field: "key_id" })?;
    let signature =
        Signature::parse(&b.signature).ok_or(ApiError::BadSignature { field: "signature" })?;
    let (key, _now) = state.store.approver_key(&key_id).await?;
    let key = key
        .filter(|k| k.principal == principal.name && k.removed_at.is_none())
        .ok_or(ApiError::BadSignature { field: "key_id" })?;
    if !key.public_key.verifies(&mandate.to_bytes(), &signature) {
        return Err(ApiError::BadSignature { field: "signature" });
    }
    let statement = mandate.to_json();
    let hash = mandate.hash();
    let created = state
        .store
        .create_mandate(&statement, &hash, &principal.name, &key_id, &signature)
        .await?;
    let now = chrono::Utc::now();
    let row = match created {
        MandateCreated::Created(row) => row,
        MandateCreated::Exists(row) if row.mandate_hash == hash => {
            return Ok((StatusCode::OK, row.to_view(now)))
        }
        MandateCreated::Exists(_) => return Err(invalid("statement.mandate_id".to_owned())),
        MandateCreated::Refused(why) => {
            tracing::info!(mandate_id = %mandate.mandate_id, principal = %principal.name, why, "mandate refused by the database");
            return Err(ApiError::Forbidden("not_recorded_approver"));
        }
    };
    tracing::info!(mandate_id = %row.mandate_id, tenant_id = %row.tenant_id, principal = %principal.name, "mandate stored");
    for (op, tenant) in state
        .store
        .mandate_pending(&row.mandate_id, RING_AT_MOST)
        .await?
    {
        state.decisions.ring_execute(OpRef::new(&tenant, &op)).await;
    }
    Ok((StatusCode::CREATED, row.to_view(now)))
}

/// Whether the caller may see a mandate: people of its tenant; an agent only the
/// mandates for it or for anyone.
fn visible_to(caller: &Caller, row: &fleet_store::MandateRow) -> bool {
    caller.0.role != Role::Agent
        || row
            .statement
            .get("for_principal")
            .and_then(Value::as_str)
            .is_none_or(|p| p == caller.0.name)
}

/// The mandates of the caller's tenants.
///
/// Newest first, at most 100, each with its standing: `budget_minor`, `spent_minor`,
/// `available_minor` (what it may still approve), `revoked_minor` (what a revocation took
/// away, never spent), `used_count` of `count_limit`. An agent sees the mandates made for
/// it or for anyone: the answer to "am I covered?".
#[utoipa::path(
    get,
    path = "/v1/mandates",
    tag = "mandates",
    responses(
        (status = 200, description = "The mandates, newest first: `{\"mandates\": […]}`.", body = MandateList),
        Unauthenticated,
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn list_mandates(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Value>, ApiError> {
    caller.may(ApiAction::ReadOperations)?;
    let now = chrono::Utc::now();
    let rows = state.store.mandates(&caller.0.tenants, 100).await?;
    let views: Vec<Value> = rows
        .iter()
        .filter(|r| visible_to(&caller, r))
        .map(|r| r.to_view(now))
        .collect();
    Ok(Json(serde_json::json!({ "mandates": views })))
}

/// One mandate of the caller's tenants, with its standing.
#[utoipa::path(
    get,
    path = "/v1/mandates/{id}",
    tag = "mandates",
    params(("id" = String, Path, description = "The mandate id (`md_` + a ULID).")),
    responses(
        (status = 200, description = "The mandate and what is left of it.", body = MandateView),
        Unauthenticated,
        (status = 404, description = "`not_found`: no such mandate among the caller's tenants.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn get_mandate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    caller.may(ApiAction::ReadOperations)?;
    let row = state
        .store
        .mandate(&id, &caller.0.tenants)
        .await?
        .filter(|r| visible_to(&caller, r))
        .ok_or(ApiError::NotFound)?;
    Ok(Json(row.to_view(chrono::Utc::now())))
}

/// Revoke a standing mandate.
///
/// Its signer or an admin revokes it: from the commit on it approves nothing, execute's
/// claim takes no operation on it, and operations it approved that no claim took yet go
/// back to pending (history `approval_voided`, reason `mandate_revoked`). What was left of
/// its budget is shown as `revoked_minor`, not spent. Revoking again answers the same.
#[utoipa::path(
    post,
    path = "/v1/mandates/{id}/revoke",
    tag = "mandates",
    params(("id" = String, Path, description = "The mandate id.")),
    responses(
        (status = 200, description = "Revoked (or revoked before): the mandate as it is now.", body = MandateView),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only its signer or an admin revokes a mandate.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not_found`: no such mandate among the caller's tenants.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        NothingDecided,
    ),
    security(("bearer" = []))
)]
pub async fn revoke_mandate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let row = revoke(&state, &caller.0, &id).await?;
    Ok(Json(row.to_view(chrono::Utc::now())))
}

/// Revokes the mandate `id` as `principal` (its signer or an admin): the route's work,
/// and the console's revoke button's.
pub(crate) async fn revoke(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<MandateRow, ApiError> {
    if !matches!(principal.role, Role::Approver | Role::Admin) {
        return Err(ApiError::Forbidden("role_not_allowed"));
    }
    let row = state
        .store
        .mandate(id, &principal.tenants)
        .await?
        .ok_or(ApiError::NotFound)?;
    if principal.role != Role::Admin && row.signed_by != principal.name {
        return Err(ApiError::Forbidden("role_not_allowed"));
    }
    let row = state
        .store
        .revoke_mandate(&row.mandate_id, &row.tenant_id, &principal.name)
        .await?
        .ok_or(ApiError::NotFound)?;
    tracing::info!(mandate_id = %row.mandate_id, principal = %principal.name, "mandate revoked");
    Ok(row)
}

/// Revoke an approval of an operation not yet claimed.
///
/// An approver revokes its own approval; an admin revokes any approver's (`principal`).
/// The approval stops counting (history `approval_voided`, reason `approval_revoked`); an
/// operation it no longer makes approved goes back to pending, and execute's claim, which
/// counts only live approvals, never takes it on the revoked one.
#[utoipa::path(
    post,
    path = "/v1/operations/{id}/approvals/revoke",
    tag = "decisions",
    params(("id" = String, Path, description = "The operation id.")),
    request_body(content = RevokeApprovalBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Revoked: the operation's view.", body = OperationView),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: approvers revoke their own approvals, admins anyone's.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not_found`: no such operation, or no live approval of that principal on it.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`already_started`: execution began; its approvals are the record of what ran.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`malformed`: not a JSON object this route takes, or `invalid_field` with the member at fault.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        RateLimited,
        NothingDecided,
    ),
    security(("bearer" = []))
)]
pub async fn revoke_approval(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<OperationView>, ApiError> {
    if !matches!(caller.0.role, Role::Approver | Role::Admin) {
        return Err(ApiError::Forbidden("role_not_allowed"));
    }
    let JsonBody(b): JsonBody<RevokeApprovalBody> = JsonBody::read(&headers, body).await?;
    let principal = match (caller.0.role, b.principal) {
        (Role::Admin, Some(p)) => p,
        (Role::Admin, None) => return Err(invalid("principal".to_owned())),
        (_, Some(p)) if p != caller.0.name => return Err(ApiError::Forbidden("role_not_allowed")),
        _ => caller.0.name.clone(),
    };
    let who = caller.0.actor();
    let (op, _) = locate(&state.store, &who, Addressed::new(&id, None))
        .await
        .map_err(ApiError::from)?;
    let revoked = state
        .store
        .revoke_approval(op.op(), &principal, &caller.0.name)
        .await
        .map_err(|e| match e.sqlstate() {
            Some("23514") => ApiError::Refused("already_started"),
            Some("42501") => ApiError::Forbidden("role_not_allowed"),
            _ => ApiError::from(e),
        })?;
    if !revoked {
        return Err(ApiError::NotFound);
    }
    tracing::info!(operation_id = %id, principal, by = %caller.0.name, "approval revoked");
    let view = state
        .store
        .operation_view(op.op())
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(view))
}
