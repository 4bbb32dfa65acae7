//! The operation as agents, approvers, operators and events see it: what the SQL function
//! `operation_view(o)` builds from a row, as a type. The store reads the function's JSON
//! into it and refuses a member it does not know ([`OperationView::from_json`]), the API,
//! the console, MCP and fleetctl read its fields, and the API's OpenAPI document describes
//! it from this definition (with the `openapi` feature). A test drives real operations
//! into every status and checks that the function's JSON reads into this type and is
//! written back unchanged, so the SQL and the type cannot drift apart.

mod schema;
mod utc_micros;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::by_name::deserialize_by_name;
use crate::confirmation::Confirmation;
use crate::payee::PayeeEvidence;
use crate::risk::RiskCue;
use crate::{ApprovalStatus, OperationId, PayloadHash, Status, WaitState};

pub use utc_micros::UtcMicros;

// The view holds these as their names; it reads them back by the same names.
deserialize_by_name!(Status, "an operation status");
deserialize_by_name!(ApprovalStatus, "an approval status");

/// An operation as agents and people see it (timestamps RFC 3339, UTC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OperationView {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub operation_id: OperationId,
    pub tenant_id: String,
    pub action: String,
    pub provider: String,
    pub target: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub supersedes: Option<OperationId>,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub payload: Value,
    /// `sha256:` + hex of the RFC 8785 snapshot: what an approver approves.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub payload_hash: PayloadHash,
    pub policy_version: String,
    pub data_version: String,
    /// Who the effect goes to, as the provider's directory described it at intake
    /// (immutable, outside the hash): `{"status": "found", "id", "name", "country",
    /// "account": {"scheme", "masked", "fingerprint"}, "verified", "version",
    /// "looked_up_at"}` or `{"status": "unknown", "id", "reason", "looked_up_at"}`; null for
    /// an action without a payee at a provider with a directory.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub payee: Option<PayeeEvidence>,
    /// A payment's or a charge's risk cues found at intake, each `{"cue": <code>, …}`
    /// (`first_payment_to_payee`, `first_payment_to_account`,
    /// `account_changed_since_last_payment`, `amount_above_usual` with `multiple` and
    /// `median_minor`, `unverified_payee`, `unknown_payee`, `possible_duplicate` with
    /// `operation_id` and `same`, `payee_name_unconfirmed` with `result`; a charge's `first_charge_to_card`, `charge_above_usual`
    /// with `multiple` and `median_minor`); empty for none, null for an operation that is
    /// neither. Immutable.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Object>>))]
    pub risk: Option<Vec<RiskCue>>,
    pub status: Status,
    /// Why it is in this status, when a reason was recorded (e.g. `superseded`).
    pub reason: Option<String>,
    /// The provider's error code of a failed operation.
    pub error_code: Option<String>,
    /// The provider's id of the effect.
    pub external_id: Option<String>,
    /// How a succeeded operation was confirmed, null until it succeeded: `by` (`answer`,
    /// `lookup`, `webhook` or `operator`), the provider's `object_id`, and what proved it
    /// (`fence` and `provider_request_id` of the attempt answered; `lookup`, what was asked
    /// and answered; `webhook_event_id`; an operator's `evidence`). The database refuses a
    /// success without one.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub confirmation: Option<Confirmation>,
    /// Waiting for a person (an operator) to settle it.
    pub escalated: bool,
    pub approval_status: ApprovalStatus,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub approval_expires_at: UtcMicros,
    /// Distinct approvers the operation's quorum policy requires (fixed when it was prepared).
    pub approvals_required: i64,
    /// Distinct approvers who approved its hash so far: approved once this reaches
    /// `approvals_required`.
    pub approvals_received: i64,
    /// The approver whose approval completed the quorum, or who rejected it.
    pub decided_by: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub decided_at: Option<UtcMicros>,
    /// The principal that submitted it through the API (null for the queue).
    pub submitted_by: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: UtcMicros,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: UtcMicros,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub unknown_since: Option<UtcMicros>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub escalated_at: Option<UtcMicros>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub resolved_at: Option<UtcMicros>,
}

/// JSON that is not an operation view: `member` names where (`payee.looked_up_at`), or is
/// empty for the document itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an operation view at {member:?}: {problem}")]
pub struct NotAView {
    pub member: String,
    pub problem: String,
}

impl OperationView {
    /// Reads the view the SQL function `operation_view` (or the API) wrote; a missing,
    /// mistyped or unknown member is refused, naming it.
    pub fn from_json(value: Value) -> Result<OperationView, NotAView> {
        serde_path_to_error::deserialize(value).map_err(|e| NotAView {
            member: e.path().to_string(),
            problem: e.inner().to_string(),
        })
    }

    /// The view as the API answers it.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a view serialises")
    }

    /// What decides a wait on this operation.
    pub fn wait_state(&self) -> WaitState {
        WaitState {
            status: self.status,
            approval: self.approval_status,
            escalated: self.escalated,
        }
    }

    /// `approvals_received/approvals_required`, as people read a quorum's progress.
    pub fn quorum(&self) -> String {
        format!("{}/{}", self.approvals_received, self.approvals_required)
    }
}

/// A pending payment's view, as the function writes one: for examples and for the tests
/// of what reads a view (change a member, read the rest as it is).
pub fn example() -> OperationView {
    OperationView::from_json(serde_json::json!({
        "operation_id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
        "tenant_id": "org_482",
        "action": "payment.create",
        "provider": "bank",
        "target": null,
        "supersedes": null,
        "payload": {"amount_minor": 1250, "currency": "EUR", "beneficiary_id": "ben_1"},
        "payload_hash": "sha256:5ab0fbd0f6e8b2b0a6b8d1c4a2f9e3d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291",
        "policy_version": "quorum-v1",
        "data_version": "v1",
        "payee": null,
        "risk": [],
        "status": "not_started",
        "reason": null,
        "error_code": null,
        "external_id": null,
        "confirmation": null,
        "escalated": false,
        "approval_status": "pending",
        "approval_expires_at": "2026-03-02T09:30:00.000000Z",
        "approvals_required": 1,
        "approvals_received": 0,
        "decided_by": null,
        "decided_at": null,
        "submitted_by": "agent-7",
        "created_at": "2026-03-01T09:30:00.000000Z",
        "updated_at": "2026-03-01T09:30:00.000000Z",
        "unknown_since": null,
        "escalated_at": null,
        "resolved_at": null
    }))
    .expect("the example is a view")
}

#[cfg(test)]
mod tests;
