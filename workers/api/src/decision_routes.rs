//! The decision routes: `POST /v1/operations/{id}/approve`, `/reject`, `/resolve` and
//! `/dispute`. Each is a thin JSON wrapper around the [`crate::decisions`] function of
//! the same name, which holds the rules; these only read the body and name the answer.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use fleet_core::{ApiAction, Resolution};
use fleet_store::Resolve;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::auth::Caller;
use crate::decisions::{Addressed, Asking};
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::problem::Problem;
use crate::query_params::Params;
use crate::route_responses::{
    BodyTooLarge, NoSuchOperation, NotJson, NothingDecided, NothingDecidedSendAgain, RateLimited,
    Unauthenticated, UnknownQueryParameter,
};
use crate::signed_approval::SignatureOffer;
use crate::state::AppState;
use crate::view_schemas::OperationView;

/// An approval of one exact snapshot.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    /// The `payload_hash` of the snapshot the approver looked at (`sha256:` + 64 hex
    /// digits). Anything but the stored snapshot's hash is refused (409 `hash_mismatch`),
    /// also after the operation was approved.
    #[schema(example = "sha256:2f0d7a0c6f7b1e6d4a1c9a8b3e5f7d9c1b3a5e7f9d1c3b5a7e9f1d3c5b7a9e1f")]
    pub payload_hash: String,
    /// The caller's registered key that signed the approval statement (`ed25519:` + 32
    /// hex digits). With `signature` and `expires_at`, or none of the three.
    #[schema(example = "ed25519:3f1c0a9b8e7d6c5b4a39281706f5e4d3")]
    pub key_id: Option<String>,
    /// The Ed25519 signature of the approval statement (docs/api.md), unpadded base64url.
    pub signature: Option<String>,
    /// The statement's expiry as signed: RFC 3339 UTC, whole seconds, `Z`; after now and
    /// at most 24 hours ahead.
    #[schema(example = "2026-12-01T18:00:00Z")]
    pub expires_at: Option<String>,
}

/// A rejection; the operation is cancelled.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    /// Why (required, at most 4,096 characters); kept in the operation's history.
    #[schema(example = "wrong beneficiary")]
    pub reason: String,
}

/// An operator's resolution from the provider's records.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    /// `succeeded`, `failed` or `cancelled`.
    #[schema(example = "succeeded", pattern = "^(succeeded|failed|cancelled)$")]
    pub outcome: String,
    /// The provider's id of the effect; required for `succeeded` unless the operation
    /// already has one.
    #[schema(example = "pay_3Mtw1H2eZvKYlo2C")]
    pub external_id: Option<String>,
    /// What the operator found (required, at most 4,096 characters).
    #[schema(example = "provider dashboard shows the payment settled at 14:02")]
    pub evidence: String,
}

/// A dispute: workers never move the operation again.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DisputeBody {
    /// Why (required, at most 4,096 characters).
    #[schema(example = "customer reports a double charge")]
    pub reason: String,
}

/// Which operation of the caller's the path's id names, when two of its tenants hold it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TenantQuery {
    /// The operation's tenant. Ids are unique per tenant: needed only when two of the
    /// caller's tenants hold this id (otherwise 409 `operation_id_ambiguous`).
    tenant: Option<String>,
}

/// What a decision route is asked: the path's operation id, the query naming its tenant
/// and the body, none of it read yet (see [`Asked::read`]).
pub struct Asked {
    id: String,
    query: Result<Params<TenantQuery>, ApiError>,
    headers: HeaderMap,
    body: Body,
}

impl FromRequest<AppState> for Asked {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let Path(id) = Path::<String>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let query = Params::from_request_parts(&mut parts, state).await;
        Ok(Asked {
            id,
            query,
            headers: parts.headers,
            body,
        })
    }
}

impl Asked {
    /// Reads the request, refusing in this order: whether the caller's role may take
    /// `action` at all, then the query's tenant, then the body, which is not awaited
    /// before the first two passed.
    async fn read<T: DeserializeOwned>(
        self,
        caller: &Caller,
        action: ApiAction,
    ) -> Result<Decision<T>, ApiError> {
        caller.may(action)?;
        let Params(q) = self.query?;
        let JsonBody(body) = JsonBody::read(&self.headers, self.body).await?;
        Ok(Decision {
            id: self.id,
            tenant: q.tenant,
            body,
        })
    }
}

/// A decision asked of the operation `id` (of `tenant`, when named), with its body.
struct Decision<T> {
    id: String,
    tenant: Option<String>,
    body: T,
}

impl<T> Decision<T> {
    /// The operation it addresses, asked by `caller`.
    fn asking<'a>(&'a self, caller: &'a Caller) -> Asking<'a> {
        caller.asking(Addressed::new(&self.id, self.tenant.as_deref()))
    }
}

/// Approve an operation.
///
/// Records the caller's approval of the snapshot with this hash. The operation is
/// approved, and its execution starts, once as many distinct approvers as its quorum
/// policy requires have approved it before it expired (`approvals_received` of
/// `approvals_required` in the answer). The same approver approving the same hash again
/// changes nothing and answers 200, as the first time, unless the operation was since
/// rejected, cancelled or expired; any other hash is 409 `hash_mismatch`, whoever sends
/// it and however far the operation got. The principal that submitted the operation
/// never approves it.
#[utoipa::path(
    post,
    path = "/v1/operations/{id}/approve",
    tag = "decisions",
    params(("id" = String, Path, description = "The operation id."), TenantQuery),
    request_body(content = ApproveBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Approval recorded, or this principal approved this same hash before: the operation's view, with the quorum's progress.", body = OperationView),
        (status = 400, description = "`invalid_query`: an unknown query parameter (`field` names it); `signature_invalid`: the signature does not count; `field` is `key_id` (unknown, not the caller's, removed, or registered too recently), `expires_at` (malformed, past, or more than 24 hours ahead) or `signature` (malformed, or not over this operation's statement). Nothing was recorded.", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed` (only approvers approve) or `submitter_cannot_approve` (the caller submitted it).", body = Problem, content_type = "application/problem+json"),
        NoSuchOperation,
        (status = 409, description = "`hash_mismatch` (not the stored snapshot's hash: also when the operation is approved, and also when the caller approved the right hash before), `approval_expired` (the window closed before the quorum), `not_pending` (rejected, cancelled, or approved by others and no longer waiting to run), or `signature_required` (the operation's policy asks for signed approvals and none was given); `operation_id_ambiguous`: two of the caller's tenants hold this id, name one with `tenant`. Nothing was recorded.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        (status = 422, description = "`malformed`: not a JSON object with `payload_hash`.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        NothingDecidedSendAgain,
    ),
    security(("bearer" = []))
)]
pub async fn approve_operation(
    State(state): State<AppState>,
    caller: Caller,
    asked: Asked,
) -> Result<Json<OperationView>, ApiError> {
    let d: Decision<ApproveBody> = asked.read(&caller, ApiAction::Approve).await?;
    let b = &d.body;
    let offer = SignatureOffer {
        key_id: b.key_id.as_deref(),
        signature: b.signature.as_deref(),
        expires_at: b.expires_at.as_deref(),
    };
    Ok(Json(
        state
            .decisions
            .approve(d.asking(&caller), &b.payload_hash, &offer)
            .await?
            .view,
    ))
}

/// Reject an operation.
///
/// The operation is cancelled, whatever approvals it had, if it has not started.
/// Rejecting a rejected operation again changes nothing and answers 200.
#[utoipa::path(
    post,
    path = "/v1/operations/{id}/reject",
    tag = "decisions",
    params(("id" = String, Path, description = "The operation id."), TenantQuery),
    request_body(content = RejectBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Rejected (or rejected before): the operation's view.", body = OperationView),
        UnknownQueryParameter,
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only approvers reject.", body = Problem, content_type = "application/problem+json"),
        NoSuchOperation,
        (status = 409, description = "`already_started`: execution began or the operation ended (cancelled otherwise than by a rejection included), or it waits for an operator (escalated); `approval_expired`: nobody approved it within the window, and it will never run; `operation_id_ambiguous`: name the tenant.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        (status = 422, description = "`malformed`, or `invalid_field` with `field` `reason` (blank or too long).", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        NothingDecided,
    ),
    security(("bearer" = []))
)]
pub async fn reject_operation(
    State(state): State<AppState>,
    caller: Caller,
    asked: Asked,
) -> Result<Json<OperationView>, ApiError> {
    let d: Decision<RejectBody> = asked.read(&caller, ApiAction::Reject).await?;
    let asking = d.asking(&caller);
    Ok(Json(
        state.decisions.reject(asking, &d.body.reason).await?.view,
    ))
}

/// Resolve an operation.
///
/// An operator settles an operation the workers could not (`unknown`, `accepted`,
/// `disputed`, or an escalated one), from the provider's records; a `succeeded` one may
/// be confirmed to close its escalation. Resolving a failed or cancelled operation to what
/// it already is changes nothing and answers 200.
#[utoipa::path(
    post,
    path = "/v1/operations/{id}/resolve",
    tag = "decisions",
    params(("id" = String, Path, description = "The operation id."), TenantQuery),
    request_body(content = ResolveBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Resolved: the operation's view.", body = OperationView),
        UnknownQueryParameter,
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only operators resolve.", body = Problem, content_type = "application/problem+json"),
        NoSuchOperation,
        (status = 409, description = "`not_allowed_in_status` (e.g. resolving a payment not yet sent, or a failed one as succeeded), or `changed_meanwhile` (look again); `operation_id_ambiguous`: name the tenant.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        (status = 422, description = "`malformed`, or `invalid_field` with `field` `outcome`, `evidence` or `external_id` (required to resolve as succeeded when none is recorded).", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        NothingDecided,
    ),
    security(("bearer" = []))
)]
pub async fn resolve_operation(
    State(state): State<AppState>,
    caller: Caller,
    asked: Asked,
) -> Result<Json<OperationView>, ApiError> {
    let d: Decision<ResolveBody> = asked.read(&caller, ApiAction::Resolve).await?;
    let b = &d.body;
    let outcome = Resolution::parse(&b.outcome).ok_or(ApiError::Invalid {
        code: "invalid_field",
        field: Some("outcome".to_owned()),
    })?;
    let r = Resolve {
        outcome,
        external_id: b.external_id.as_deref(),
        evidence: &b.evidence,
    };
    Ok(Json(
        state.decisions.resolve(d.asking(&caller), r).await?.view,
    ))
}

/// Dispute an operation.
///
/// An operator takes an operation that is not final out of the workers' hands for
/// investigation; only an operator's resolution moves it again. Disputing it again
/// changes nothing and answers 200.
#[utoipa::path(
    post,
    path = "/v1/operations/{id}/dispute",
    tag = "decisions",
    params(("id" = String, Path, description = "The operation id."), TenantQuery),
    request_body(content = DisputeBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Disputed: the operation's view.", body = OperationView),
        UnknownQueryParameter,
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only operators dispute.", body = Problem, content_type = "application/problem+json"),
        NoSuchOperation,
        (status = 409, description = "`not_allowed_in_status` (the operation is final), or `changed_meanwhile`; `operation_id_ambiguous`: name the tenant.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        (status = 422, description = "`malformed`, or `invalid_field` with `field` `reason`.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        NothingDecided,
    ),
    security(("bearer" = []))
)]
pub async fn dispute_operation(
    State(state): State<AppState>,
    caller: Caller,
    asked: Asked,
) -> Result<Json<OperationView>, ApiError> {
    let d: Decision<DisputeBody> = asked.read(&caller, ApiAction::Dispute).await?;
    let asking = d.asking(&caller);
    Ok(Json(
        state.decisions.dispute(asking, &d.body.reason).await?.view,
    ))
}
