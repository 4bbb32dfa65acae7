//! The OpenAPI 3.1 document, generated from the handlers themselves: every route is
//! registered through `utoipa_axum`'s router together with its `#[utoipa::path]`, so a
//! route cannot exist without being documented. The schemas below document what the
//! handlers send and receive; they are never built (the API answers with what the SQL
//! function `operation_view` returns), and a test compares `OperationView`'s properties
//! with the keys of a real view.

#![allow(dead_code)]

use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::decision_routes::{ApproveBody, DisputeBody, RejectBody, ResolveBody};
use crate::error::{ErrorBody, ErrorDetail};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "fleet API",
        description = "Submit intents, follow the operations they become, and decide on them. Every request carries `Authorization: Bearer <token>` (`fleetctl token create`); a caller sees, submits and decides only for the tenants its principal was granted, and only what its role permits (agents submit, approvers approve and reject, operators resolve and dispute).",
    ),
    modifiers(&BearerAuth),
    components(schemas(ErrorBody, ErrorDetail, IntentV1, OperationView, OperationPage, StatusName, ApprovalStatusName, ApproveBody, RejectBody, ResolveBody, DisputeBody)),
    tags(
        (name = "intents", description = "Proposing side effects."),
        (name = "operations", description = "Following them."),
        (name = "schemas", description = "The contract, machine-readable."),
        (name = "decisions", description = "People deciding on them: approvers approve or reject, operators resolve or dispute."),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            let mut scheme = Http::new(HttpAuthScheme::Bearer);
            scheme.description = Some(
                "A token made by `fleetctl token create` (`fleet_` + 64 hex digits).".to_owned(),
            );
            components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
        }
    }
}

/// An intent.v1 message: what an agent proposes. The snapshot (operation_id, tenant_id,
/// action, provider, target, payload, policy_version, data_version) is what a person
/// approves, by its hash.
#[derive(Serialize, ToSchema)]
pub struct IntentV1 {
    /// Always `intent.v1`.
    #[schema(example = "intent.v1")]
    schema: String,
    /// `op_` + a 26-character ULID, made by the agent before it submits, so that a resent
    /// intent is the same operation.
    #[schema(example = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8")]
    operation_id: String,
    #[schema(example = "org_482")]
    tenant_id: String,
    /// An action of the catalogue: `payment.create`, `refund.create`, `crm.deal.create`,
    /// `crm.deal.update`, `order.status.change` or `contract.send`.
    #[schema(example = "payment.create")]
    action: String,
    /// The provider serving the action: `payments` for payments and refunds, `crm` for
    /// deals, `orders` for order status changes, `esign` for contracts.
    #[schema(example = "payments")]
    provider: String,
    /// The deal id for `crm.deal.update`, the order id for `order.status.change`; null
    /// otherwise.
    target: Option<String>,
    /// The action's fields; money is an integer in minor units.
    #[schema(value_type = Object, example = json!({"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"}))]
    payload: serde_json::Value,
    #[schema(example = "payments-v3")]
    policy_version: String,
    #[schema(example = "inv_9182@7")]
    data_version: String,
    /// How long the approval may wait, 1 s to 30 days.
    #[schema(example = 3600)]
    approval_ttl_seconds: i64,
    /// Shown to the approver; not part of the snapshot.
    rationale: Option<String>,
    /// The operation this one corrects (it is cancelled if it never started).
    supersedes: Option<String>,
}

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
    /// A payment's risk cues found at intake, each `{"cue": <code>, …}`
    /// (`first_payment_to_payee`, `first_payment_to_account`,
    /// `account_changed_since_last_payment`, `amount_above_usual` with `multiple` and
    /// `median_minor`, `unverified_payee`, `unknown_payee`); empty for none, null for an
    /// operation that is no payment. Immutable.
    #[schema(value_type = Option<Vec<Object>>)]
    risk: Option<Vec<serde_json::Value>>,
    status: StatusName,
    /// Why it is in this status, when a reason was recorded (e.g. `superseded`).
    reason: Option<String>,
    /// The provider's error code of a failed operation.
    error_code: Option<String>,
    /// The provider's id of the effect.
    external_id: Option<String>,
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

#[cfg(test)]
mod tests {
    use fleet_core::{ApprovalStatus, Status};
    use serde_json::Value;
    use utoipa::OpenApi;

    fn schema(name: &str) -> Value {
        let doc = serde_json::to_value(super::ApiDoc::openapi()).unwrap();
        doc["components"]["schemas"][name].clone()
    }

    fn names(schema: &Value) -> Vec<String> {
        schema["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("no enum in {schema}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn the_documented_statuses_are_cores() {
        let core: Vec<String> = Status::ALL.iter().map(|s| s.as_str().to_owned()).collect();
        assert_eq!(names(&schema("StatusName")), core);
        let core: Vec<String> = ApprovalStatus::ALL
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        assert_eq!(names(&schema("ApprovalStatusName")), core);
    }

    #[test]
    fn times_are_documented_as_date_times() {
        let view = schema("OperationView");
        for field in ["created_at", "updated_at", "approval_expires_at"] {
            assert_eq!(view["properties"][field]["format"], "date-time", "{field}");
        }
        for field in ["decided_at", "unknown_since", "escalated_at", "resolved_at"] {
            let text = view["properties"][field].to_string();
            assert!(text.contains("date-time"), "{field}: {text}");
        }
    }
}
