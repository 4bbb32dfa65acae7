//! The views the routes answer with, as the OpenAPI document describes them
//! ([`crate::openapi`] lists them): documented, never built, since the API answers with
//! what the SQL function `operation_view` returns. The routes name them in their
//! `#[utoipa::path]`s; a test compares `OperationView`'s properties with the keys of a
//! real view.

#![allow(dead_code)]

use serde::Serialize;
use utoipa::ToSchema;

/// An operation as agents and people see it (timestamps RFC 3339, UTC).
#[derive(Serialize, ToSchema)]
pub struct OperationView {
    operation_id: String,
    tenant_id: String,
    action: String,
    provider: String,
    target: Option<String>,
    supersedes: Option<String>,
    #[schema(value_type = Object)]
    payload: serde_json::Value,
    /// `sha256:` + hex of the RFC 8785 snapshot: what an approver approves.
    payload_hash: String,
    policy_version: String,
    data_version: String,
    /// Who the effect goes to, as the provider's directory described it at intake
    /// (immutable, outside the hash): `{"status": "found", "id", "name", "country",
    /// "account": {"scheme", "masked", "fingerprint"}, "verified", "version",
    /// "looked_up_at"}` or `{"status": "unknown", "id", "reason", "looked_up_at"}`; null for
    /// an action without a payee at a provider with a directory.
    #[schema(value_type = Option<Object>)]
    payee: Option<serde_json::Value>,
    /// A payment's or a charge's risk cues found at intake, each `{"cue": <code>, …}`
    /// (`first_payment_to_payee`, `first_payment_to_account`,
    /// `account_changed_since_last_payment`, `amount_above_usual` with `multiple` and
    /// `median_minor`, `unverified_payee`, `unknown_payee`, `possible_duplicate` with
    /// `operation_id` and `same`, `payee_name_unconfirmed` with `result`; a charge's `first_charge_to_card`, `charge_above_usual`
    /// with `multiple` and `median_minor`); empty for none, null for an operation that is
    /// neither. Immutable.
    #[schema(value_type = Option<Vec<Object>>)]
    risk: Option<Vec<serde_json::Value>>,
    status: StatusName,
    /// Why it is in this status, when a reason was recorded (e.g. `superseded`).
    reason: Option<String>,
    /// The provider's error code of a failed operation.
    error_code: Option<String>,
    /// The provider's id of the effect.
    external_id: Option<String>,
    /// How a succeeded operation was confirmed, null until it succeeded: `by` (`answer`,
    /// `lookup`, `webhook` or `operator`), the provider's `object_id`, and what proved it
    /// (`fence` and `provider_request_id` of the attempt answered; `lookup`, what was asked
    /// and answered; `webhook_event_id`; an operator's `evidence`). The database refuses a
    /// success without one.
    #[schema(value_type = Option<Object>)]
    confirmation: Option<serde_json::Value>,
    /// Waiting for a person (an operator) to settle it.
    escalated: bool,
    approval_status: ApprovalStatusName,
    #[schema(value_type = String, format = DateTime)]
    approval_expires_at: String,
    /// Distinct approvers the operation's quorum policy requires (fixed when it was prepared).
    approvals_required: i64,
    /// Distinct approvers who approved its hash so far: approved once this reaches
    /// `approvals_required`.
    approvals_received: i64,
    /// The approver whose approval completed the quorum, or who rejected it.
    decided_by: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    decided_at: Option<String>,
    /// The principal that submitted it through the API (null for the queue).
    submitted_by: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    created_at: String,
    #[schema(value_type = String, format = DateTime)]
    updated_at: String,
    #[schema(value_type = Option<String>, format = DateTime)]
    unknown_since: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    escalated_at: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    resolved_at: Option<String>,
}

/// Where an operation stands (`fleet_core::Status`; a test keeps the two the same).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusName {
    /// Prepared; waiting for its approval or for a worker to claim it.
    NotStarted,
    /// Claimed; the provider is being called.
    InProgress,
    /// The provider accepted it asynchronously; the final answer follows.
    Accepted,
    /// The provider's answer was lost; reconciliation is finding out (never a failure).
    Unknown,
    Succeeded,
    Failed,
    Cancelled,
    /// An operator took it out of the workers' hands.
    Disputed,
}

/// Where its approval stands (`fleet_core::ApprovalStatus`; a test keeps the two the same).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatusName {
    Pending,
    Approved,
    Rejected,
    /// Nobody decided before `approval_expires_at`.
    Expired,
}

/// One page of a listing.
#[derive(Serialize, ToSchema)]
pub struct OperationPage {
    data: Vec<OperationView>,
    /// Pass as `cursor` for the next page; null on the last page.
    next_cursor: Option<String>,
}
