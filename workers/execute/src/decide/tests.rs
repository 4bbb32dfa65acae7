use super::*;
use chrono::Utc;
use fleet_core::{ApprovalStatus, ProviderName, Snapshot, Status};
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
    let hash = snapshot.hash().as_str().to_owned();
    let now = Utc::now();
    OperationRow {
        operation_id: snapshot.operation_id,
        tenant_id: snapshot.tenant_id,
        action: snapshot.action,
        provider: ProviderName::Payments,
        target: None,
        supersedes: None,
        rationale: None,
        payload: snapshot.payload,
        payload_hash: hash.clone(),
        policy_version: snapshot.policy_version,
        data_version: snapshot.data_version,
        idempotency_key: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        approval_status: ApprovalStatus::Approved,
        approval_expires_at: now,
        approved_hash: Some(hash),
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
        approval_expired: false,
        lease_expired: false,
        deadline_passed: false,
    }
}

#[test]
fn an_approved_intact_row_is_claimed() {
    assert_eq!(decide(&approved_row(), &[]), Decision::Claim);
    assert_eq!(
        decide(&approved_row(), &["payments-v3".into()]),
        Decision::Claim
    );
}

#[test]
fn approval_problems_cancel_without_a_call() {
    let mut r = approved_row();
    r.approval_expired = true;
    assert_eq!(decide(&r, &[]), Decision::Cancel("approval_expired"));
    let mut r = approved_row();
    r.approval_status = ApprovalStatus::Rejected;
    assert_eq!(decide(&r, &[]), Decision::Cancel("approval_rejected"));
    assert_eq!(
        decide(&approved_row(), &["payments-v4".into()]),
        Decision::Cancel("policy_outdated")
    );
}

#[test]
fn a_snapshot_that_no_longer_matches_its_approval_is_escalated_never_cancelled() {
    let mut r = approved_row();
    r.payload["amount_minor"] = json!(99_999_999);
    assert_eq!(
        decide(&r, &[]),
        Decision::Escalate("snapshot_hash_mismatch")
    );
    let mut r = approved_row();
    r.approved_hash = Some(format!("sha256:{}", "0".repeat(64)));
    assert_eq!(
        decide(&r, &[]),
        Decision::Escalate("approved_hash_mismatch")
    );
}

#[test]
fn an_escalated_row_is_left_to_a_person_whatever_its_status() {
    for status in [
        Status::NotStarted,
        Status::InProgress,
        Status::Unknown,
        Status::Accepted,
    ] {
        let mut r = approved_row();
        r.status = status;
        r.lease_expired = true;
        r.escalated_at = Some(chrono::Utc::now());
        assert_eq!(decide(&r, &[]), Decision::Nothing, "{status}");
    }
}

#[test]
fn pending_rows_wait_and_others_are_left_alone_or_sent_to_reconcile() {
    let mut r = approved_row();
    r.approval_status = ApprovalStatus::Pending;
    r.approved_hash = None;
    assert_eq!(decide(&r, &[]), Decision::Nothing);
    let mut r = approved_row();
    r.status = Status::InProgress;
    assert_eq!(decide(&r, &[]), Decision::Nothing);
    r.lease_expired = true;
    assert_eq!(decide(&r, &[]), Decision::RingReconcile);
    r.status = Status::Unknown;
    assert_eq!(decide(&r, &[]), Decision::RingReconcile);
    for s in [
        Status::Accepted,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
        Status::Disputed,
    ] {
        r.status = s;
        assert_eq!(decide(&r, &[]), Decision::Nothing, "{s}");
    }
}
