//! The answers of the mandate and batch-approval routes, as the OpenAPI document describes
//! them: documented, never built (the routes answer with what `fleet_store`'s
//! `MandateRow::to_view` and the batch handler make), so that a generated client reads
//! them as typed values rather than untyped objects. A test compares `MandateView`'s
//! properties with the keys of a real view.

#![allow(dead_code)]

use serde::Serialize;
use utoipa::ToSchema;

/// A standing mandate and what is left of it (docs/mandates.md).
#[derive(Serialize, ToSchema)]
pub struct MandateView {
    mandate_id: String,
    tenant_id: String,
    /// The `fleet.mandate.v1` statement, as signed.
    #[schema(value_type = Object)]
    statement: serde_json::Value,
    /// The SHA-256 of the statement's canonical bytes: what was signed.
    mandate_hash: String,
    /// The approver who signed it.
    signed_by: String,
    /// The approver's key that signed it.
    key_id: String,
    #[schema(value_type = String, format = DateTime)]
    created_at: String,
    status: MandateStatusName,
    currency: String,
    budget_minor: i64,
    /// Spent by the operations it approved (a payment that came back unpaid gives its
    /// amount back).
    spent_minor: i64,
    /// Left to approve with: none once revoked or expired.
    available_minor: i64,
    /// What a revocation took away from the budget (0 while it stands).
    revoked_minor: i64,
    count_limit: i64,
    used_count: i64,
    #[schema(value_type = Option<String>, format = DateTime)]
    revoked_at: Option<String>,
    revoked_by: Option<String>,
}

/// Where a mandate stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MandateStatusName {
    Active,
    /// Past its `valid_until`.
    Expired,
    Revoked,
}

/// The caller's mandates, newest first.
#[derive(Serialize, ToSchema)]
pub struct MandateList {
    mandates: Vec<MandateView>,
}

/// A batch approval recorded.
#[derive(Serialize, ToSchema)]
pub struct BatchApproved {
    batch_id: String,
    /// The hash of the batch statement that was signed.
    batch_hash: String,
    operations: Vec<BatchOperation>,
}

/// One operation of a recorded batch.
#[derive(Serialize, ToSchema)]
pub struct BatchOperation {
    operation_id: String,
    /// `approved` when this approval completed its quorum, `pending` while it waits for more.
    approval_status: BatchApprovalStatus,
}

/// Where a batch's operation's approval stands once the batch is recorded.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BatchApprovalStatus {
    Approved,
    Pending,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use chrono::{Duration, Utc};
    use fleet_core::mandate::MandateStanding;
    use fleet_store::MandateRow;
    use serde_json::{json, Value};
    use utoipa::PartialSchema;

    fn documented<T: PartialSchema>() -> Value {
        serde_json::to_value(T::schema()).unwrap()
    }

    fn keys(v: &Value, member: &str) -> BTreeSet<String> {
        v[member].as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn the_documented_mandate_is_the_view_the_routes_answer_with() {
        let now = Utc::now();
        let row = MandateRow {
            mandate_id: "mnd_01".into(),
            tenant_id: "org_482".into(),
            statement: json!({}),
            mandate_hash: "sha256:00".into(),
            signed_by: "alice".into(),
            key_id: "ed25519:00".into(),
            created_at: now,
            standing: MandateStanding {
                budget_minor: 100,
                spent_minor: 10,
                count_limit: 5,
                used_count: 1,
                revoked: false,
            },
            currency: "KZT".into(),
            valid_until: now + Duration::days(1),
            revoked_at: None,
            revoked_by: None,
        };
        let view = row.to_view(now);
        let real: BTreeSet<String> = view.as_object().unwrap().keys().cloned().collect();
        let schema = documented::<super::MandateView>();
        assert_eq!(keys(&schema, "properties"), real);
        let statuses = documented::<super::MandateStatusName>();
        assert!(statuses["enum"]
            .as_array()
            .unwrap()
            .contains(&view["status"]));
    }
}
