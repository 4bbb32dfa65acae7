//! The proposal tools, one per action. A call's arguments become an intent.v1 (the tool
//! names the action and the provider; unless the agent gives an operation id, the id is
//! derived from what is proposed, so that the same call made twice is one operation
//! (`fleet_core::intent::derived_id`); the caller's only tenant is the default one), which
//! then takes exactly the path
//! of `POST /v1/intents`: the prepare worker's intake validates and writes it, idempotent
//! by operation id, as submitted by the caller. The answer comes at once: nothing here
//! waits for a person, or decides in one's place.

use fleet_core::intent::derived_id::derived_operation_id;
use fleet_core::intent::proposal;
use fleet_core::{Action, ApiAction, ApprovalStatus};
use fleet_intake::intake;
use rmcp::model::CallToolResult;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::answers::{answer, refusal};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::intents::{accept, invalid};
use crate::state::AppState;

/// What a proposal tool answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Proposed {
    /// The operation's id: pass it to get_operation, and again to this tool if you retry.
    pub operation_id: String,
    /// `sha256:` + hex of the RFC 8785 snapshot: exactly what the person approves.
    pub payload_hash: String,
    /// `pending_approval` until a person decides.
    pub status: ProposalStatus,
    /// The page where a person approves or rejects it: hand it to them. Nothing happens
    /// before they approve. Absent when this deployment has no console: a link to a page
    /// that is not served would send the person nowhere (they decide with fleetctl or
    /// the HTTP API instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_url: Option<String>,
    /// When the approval expires if nobody decided (RFC 3339, UTC).
    pub approval_expires_at: String,
    /// `false` when this operation was proposed before (a retried call): nothing new
    /// was created.
    pub created: bool,
}

/// Where the approval stands. A retried call after the decision says which it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    PendingApproval,
    Approved,
    Rejected,
    Expired,
}

impl From<ApprovalStatus> for ProposalStatus {
    fn from(approval: ApprovalStatus) -> Self {
        match approval {
            ApprovalStatus::Pending => ProposalStatus::PendingApproval,
            ApprovalStatus::Approved => ProposalStatus::Approved,
            ApprovalStatus::Rejected => ProposalStatus::Rejected,
            ApprovalStatus::Expired => ProposalStatus::Expired,
        }
    }
}

pub async fn propose(
    state: &AppState,
    caller: &Caller,
    action: Action,
    arguments: Map<String, Value>,
) -> CallToolResult {
    match proposed(state, caller, action, arguments).await {
        Ok(p) => {
            let note = note(&p);
            answer(serde_json::to_value(p).unwrap_or_default(), Some(note))
        }
        Err(e) => refusal(&e),
    }
}

async fn proposed(
    state: &AppState,
    caller: &Caller,
    action: Action,
    arguments: Map<String, Value>,
) -> Result<Proposed, ApiError> {
    caller.may(ApiAction::SubmitIntent)?;
    let only_tenant = match caller.0.tenants.as_slice() {
        [one] => Some(one.as_str()),
        _ => None,
    };
    // A retried call without an operation id is the same operation, never a second one
    // (the tools say `idempotentHint: true`). The tenant is the one the intent will
    // name; without one (several tenants, none given) the envelope refuses anyway.
    let tenant = match arguments.get("tenant_id") {
        None | Some(Value::Null) => only_tenant.unwrap_or_default().to_owned(),
        Some(Value::String(tenant)) => tenant.clone(),
        Some(other) => other.to_string(),
    };
    let assigned = derived_operation_id(action, &tenant, &arguments);
    let intent = proposal::envelope(action, arguments, &assigned, only_tenant)
        .map_err(|e| invalid(intake::refuse(&e)))?;
    let (created, view) =
        accept(state, caller, Value::Object(intent).to_string().as_bytes()).await?;
    let operation_id = view.operation_id.to_string();
    let payload_hash = view.payload_hash.to_string();
    let approval_expires_at = view.approval_expires_at.to_string();
    let approval = view.approval_status;
    Ok(Proposed {
        approval_url: state
            .approval_pages
            .then(|| state.public_url.approval_page(&operation_id)),
        operation_id,
        payload_hash,
        status: approval.into(),
        approval_expires_at,
        created,
    })
}

/// One sentence for the model, so that it neither waits in silence nor takes the
/// proposal for the deed.
fn note(p: &Proposed) -> String {
    let again = if p.created {
        ""
    } else {
        "This operation was proposed before; nothing new was created. "
    };
    match (p.status, &p.approval_url) {
        (ProposalStatus::PendingApproval, Some(url)) => format!(
            "{again}Stored, not done: nothing happens until a person approves it at {url} (before {}). \
             Give them that link, then call get_operation with operation_id {} and wait_for \"final\" to learn the outcome.",
            p.approval_expires_at, p.operation_id
        ),
        (ProposalStatus::PendingApproval, None) => format!(
            "{again}Stored, not done: nothing happens until a person approves it (before {}) with fleetctl or the HTTP API; \
             this deployment has no approval page to link to. Tell them operation_id {} and its payload_hash, \
             then call get_operation with wait_for \"final\" to learn the outcome.",
            p.approval_expires_at, p.operation_id
        ),
        (ProposalStatus::Approved | ProposalStatus::Rejected | ProposalStatus::Expired, _) => format!(
            "{again}A decision was already made on it; call get_operation with operation_id {} for what happened.",
            p.operation_id
        ),
    }
}
