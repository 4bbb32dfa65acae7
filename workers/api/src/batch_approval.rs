//! `POST /v1/approvals/batch`: an approver approves several pending operations of one
//! tenant in one decision, with one signature over the `fleet.approval_batch.v1`
//! statement (`fleet_core::batch_approval`). The statement is rebuilt here from the stored
//! operations and must be exactly the one signed (the same operations and hashes, the
//! same count and totals); the signature is verified with the caller's registered key; the
//! database records one approval per listed operation and none for any other
//! (migrations/0064_approval_batches.sql), and execute is rung for each it approved.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use fleet_core::approval_statement::parse_expiry;
use fleet_core::authz::SignIn;
use fleet_core::batch_approval::{BatchItem, BatchStatement};
use fleet_core::{ApiAction, KeyId, OpRef, Signature};
use fleet_store::{BatchRecorded, Principal};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::answer_schemas::BatchApproved;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::problem::Problem;
use crate::route_responses::{BodyTooLarge, NotJson, NothingDecided, RateLimited, Unauthenticated};
use crate::state::AppState;

/// A batch of approvals signed once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchBody {
    /// The `fleet.approval_batch.v1` statement, as signed (docs/mandates.md).
    #[schema(value_type = Object)]
    pub statement: Value,
    /// The caller's registered key that signed it.
    pub key_id: String,
    /// The signature of the statement's RFC 8785 canonical bytes, unpadded base64url.
    pub signature: String,
}

fn invalid(field: &str) -> ApiError {
    ApiError::Invalid {
        code: "invalid_field",
        field: Some(format!("statement.{field}")),
    }
}

/// Approve several operations with one signature.
///
/// Every listed operation must be a pending operation of the statement's tenant with the
/// listed hash, and the statement's `count` and `totals` must
/// be those of the listed operations; otherwise nothing is recorded. Each listed operation
/// gets one approval by the caller, signed by the batch's signature (it counts as a signed
/// approval), and runs once its quorum is reached.
#[utoipa::path(
    post,
    path = "/v1/approvals/batch",
    tag = "decisions",
    request_body(content = BatchBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Recorded: each listed operation with its approval status.", body = BatchApproved),
        (status = 400, description = "`signature_invalid`: `key_id` or `signature`.", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed` or `tenant_not_granted`.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`not_pending`: a listed operation cannot be approved in a batch (not pending, another hash, or the caller submitted it); nothing was recorded.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        (status = 422, description = "`invalid_field`: the statement's member at fault (its `count` or `totals` not those of the listed operations, among others).", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        NothingDecided,
    ),
    security(("bearer" = []))
)]
pub async fn approve_batch(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    caller.may(ApiAction::Approve)?;
    let JsonBody(b): JsonBody<BatchBody> = JsonBody::read(&headers, body).await?;
    record(&state, &caller.0, caller.signed_in_with(), &b)
        .await
        .map(Json)
}

/// Records the batch `b` as `principal` signed in with `signed_in`: the route's work, and
/// the console's select-and-approve page's (the same checks, the same database function),
/// whose caller checked the role first. Answers what the route answers.
pub(crate) async fn record(
    state: &AppState,
    principal: &Principal,
    signed_in: SignIn,
    b: &BatchBody,
) -> Result<Value, ApiError> {
    let st = &b.statement;
    let text = |m: &str| st.get(m).and_then(Value::as_str).map(str::to_owned);
    let tenant = text("tenant_id").ok_or_else(|| invalid("tenant_id"))?;
    if !principal.tenants.contains(&tenant) {
        return Err(ApiError::Forbidden("tenant_not_granted"));
    }
    let batch_id = text("batch_id")
        .filter(|id| id.starts_with("ab_") && id.len() == 29)
        .ok_or_else(|| invalid("batch_id"))?;
    let expires_at = text("expires_at")
        .as_deref()
        .and_then(parse_expiry)
        .ok_or_else(|| invalid("expires_at"))?;
    let listed = st
        .get("operations")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("operations"))?;
    let mut items = Vec::new();
    for entry in listed {
        let op = entry.get("operation_id").and_then(Value::as_str);
        let hash = entry.get("payload_hash").and_then(Value::as_str);
        let (Some(op), Some(hash)) = (op, hash) else {
            return Err(invalid("operations"));
        };
        let row = state
            .store
            .get(OpRef::new(&tenant, op))
            .await?
            .ok_or(ApiError::Refused("not_pending"))?;
        let amount = row.payload.get("amount_minor").and_then(Value::as_i64).zip(
            row.payload
                .get("currency")
                .and_then(Value::as_str)
                .map(str::to_owned),
        );
        items.push(BatchItem {
            operation_id: op.to_owned(),
            payload_hash: hash.to_owned(),
            amount,
        });
    }
    let rebuilt = BatchStatement::new(batch_id, tenant, items, expires_at)
        .ok_or_else(|| invalid("operations"))?;
    if rebuilt.to_json() != *st {
        // Another count, other totals, an operation listed twice or out of order, another
        // member: not the statement these operations make.
        return Err(invalid("totals"));
    }
    if !rebuilt.expiry_in_bounds(chrono::Utc::now()) {
        return Err(ApiError::BadSignature {
            field: "expires_at",
        });
    }
    let key_id = KeyId::parse(&b.key_id).ok_or(ApiError::BadSignature { field: "key_id" })?;
    let signature =
        Signature::parse(&b.signature).ok_or(ApiError::BadSignature { field: "signature" })?;
    let (key, _) = state.store.approver_key(&key_id).await?;
    let key = key
        .filter(|k| k.principal == principal.name && k.removed_at.is_none())
        .ok_or(ApiError::BadSignature { field: "key_id" })?;
    if !key.public_key.verifies(&rebuilt.to_bytes(), &signature) {
        return Err(ApiError::BadSignature { field: "signature" });
    }
    let recorded = state
        .store
        .record_batch(
            st,
            &rebuilt.hash(),
            &principal.name,
            &key_id,
            &signature,
            signed_in.as_str(),
        )
        .await?;
    let ops = match recorded {
        BatchRecorded::Recorded(ops) => ops,
        BatchRecorded::Refused(why) => {
            tracing::info!(principal = %principal.name, why, "batch approval refused by the database");
            return Err(ApiError::Refused("not_pending"));
        }
    };
    let mut answer = Vec::new();
    for (op, approved) in &ops {
        if *approved {
            state.decisions.ring_execute(op.op()).await;
        }
        answer.push(json!({
            "operation_id": op.op().operation_id,
            "approval_status": if *approved { "approved" } else { "pending" },
        }));
    }
    tracing::info!(principal = %principal.name, count = ops.len(), "batch approval recorded");
    Ok(json!({
        "batch_id": rebuilt.batch_id,
        "batch_hash": rebuilt.hash(),
        "operations": answer,
    }))
}
