use super::*;
use chrono::Utc;
use fleet_core::execute::{decide, Decision};
use fleet_core::Reason;
use fleet_core::{Action, ApprovalStatus, IdempotencyKey, OperationId, Snapshot, Status};
use serde_json::json;

fn approved_row() -> OperationRow {
    let snapshot = Snapshot {
        operation_id: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        tenant_id: "org_482".into(),
        action: "payment.create".into(),
        provider: "payments".into(),
        target: None,
        payload: json!({"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"}),
        policy_version: "payments-v3".into(),
        data_version: "inv_9182@7".into(),
    };
    let hash = snapshot.hash();
    let now = Utc::now();
    OperationRow {
        operation_id: OperationId::parse(&snapshot.operation_id).unwrap(),
        tenant_id: snapshot.tenant_id,
        action: Action::parse(&snapshot.action).unwrap(),
        provider: fleet_core::catalogue::provider_spec::PAYMENTS.name,
        target: None,
        supersedes: None,
        rationale: None,
        payload: snapshot.payload,
        payload_hash: hash.clone(),
        policy_version: snapshot.policy_version,
        data_version: snapshot.data_version,
        idempotency_key: IdempotencyKey::parse("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8").unwrap(),
        approval_status: ApprovalStatus::Approved,
        approval_expires_at: now,
        approved_hash: Some(hash.to_string()),
        decided_by: Some("alice".into()),
        decided_at: Some(now),
        status: Status::NotStarted,
        status_reason: None,
        fence: 0,
        lease_owner: None,
        lease_expires_at: None,
        attempts: 0,
        external_id: None,
        provider_request_id: None,
        result: None,
        error_code: None,
        deadline_at: None,
        unknown_since: None,
        escalated_at: None,
        resolved_at: None,
        created_at: now,
        updated_at: now,
        lookup_failures: 0,
        next_lookup_at: None,
        signatures_required: 0,
        payee: None,
        trace_parent: None,
        approval_expired: false,
        lease_expired: false,
        deadline_passed: false,
    }
}

#[test]
fn an_approved_intact_row_is_claimed() {
    let facts = facts_of(&approved_row(), &[]);
    assert_eq!(facts, ExecuteFacts::CLAIMABLE);
    assert_eq!(decide(facts), Decision::Claim);
    assert_eq!(
        decide(facts_of(&approved_row(), &["payments-v3".into()])),
        Decision::Claim
    );
}

#[test]
fn the_database_clocks_verdicts_and_the_decision_columns_are_read_as_they_are() {
    let mut r = approved_row();
    r.approval_expired = true;
    r.lease_expired = true;
    r.approval_status = ApprovalStatus::Rejected;
    r.status = Status::InProgress;
    r.escalated_at = Some(Utc::now());
    let f = facts_of(&r, &[]);
    assert!(f.approval_expired && f.lease_expired && f.escalated);
    assert_eq!(
        (f.status, f.approval),
        (Status::InProgress, ApprovalStatus::Rejected)
    );
    assert!(!facts_of(&approved_row(), &["payments-v4".into()]).policy_current);
}

#[test]
fn a_snapshot_that_no_longer_matches_its_approval_is_escalated_never_cancelled() {
    let mut r = approved_row();
    r.payload["amount_minor"] = json!(99_999_999);
    let f = facts_of(&r, &[]);
    assert!(f.approved_hash_matches && !f.snapshot_hash_matches);
    assert_eq!(decide(f), Decision::Escalate(Reason::SnapshotHashMismatch));
    let mut r = approved_row();
    r.approved_hash = Some(format!("sha256:{}", "0".repeat(64)));
    assert_eq!(
        decide(facts_of(&r, &[])),
        Decision::Escalate(Reason::ApprovedHashMismatch)
    );
    let mut r = approved_row();
    r.approval_status = ApprovalStatus::Pending;
    r.approved_hash = None;
    assert!(!facts_of(&r, &[]).approved_hash_matches);
    assert_eq!(decide(facts_of(&r, &[])), Decision::Nothing);
}
