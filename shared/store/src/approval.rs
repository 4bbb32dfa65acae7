//! Approval decisions. A person approves one exact snapshot hash; anything else is refused
//! with the reason, and nothing changes.

use fleet_core::{Event, Status};

use crate::{Store, StoreError, Transition, TransitionOutcome};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalOutcome {
    Approved,
    NotFound,
    /// The hash given is not the stored snapshot's: the approver saw something else.
    HashMismatch { stored: String },
    /// Already decided (or no longer waiting to run).
    NotPending { approval_status: String, status: String },
    Expired,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectOutcome {
    Rejected,
    NotFound,
    /// Execution already began, or the operation is final: too late to reject.
    TooLate { status: String },
}

/// The approval's compare-and-set (written as every CAS is, see `rows.rs`): `$5` is
/// `pending`, `$6` `approved` and `$7` the status `not_started`, bound as parameters.
const APPROVE: &str = "
WITH approved AS (
    UPDATE operations SET approval_status = $6, approved_hash = $2, decided_by = $3,
        decided_at = now(), updated_at = now()
    WHERE operation_id = $1 AND approval_status = $5 AND payload_hash = $2
      AND approval_expires_at > now() AND status = $7
    RETURNING operation_id, fence
), event AS (
    INSERT INTO operation_events (operation_id, kind, fence, actor, evidence)
    SELECT operation_id, 'approved', fence, $4, jsonb_build_object('approved_hash', $2::text) FROM approved
)
SELECT count(*) AS approved FROM approved";

/// `$2` is `pending`, bound as a parameter (see `rows.rs`).
const EXPIRE: &str = "
WITH expired AS (
    UPDATE operations SET approval_status = 'expired', updated_at = now()
    WHERE operation_id = $1 AND approval_status = $2 AND approval_expires_at <= now()
    RETURNING operation_id, fence
)
INSERT INTO operation_events (operation_id, kind, fence, actor, reason)
SELECT operation_id, 'approval_expired', fence, 'approver', 'approval_expired' FROM expired";

impl Store {
    /// Approves `hash` for the operation on behalf of `by`. One statement, one commit.
    pub async fn approve(&self, operation_id: &str, hash: &str, by: &str) -> Result<ApprovalOutcome, StoreError> {
        let actor = format!("approver:{by}");
        let client = self.client().await?;
        let approve = client.prepare_cached(APPROVE).await?;
        let not_started = Status::NotStarted.as_str();
        let row = client.query_one(&approve, &[&operation_id, &hash, &by, &actor, &"pending", &"approved", &not_started]).await?;
        if row.get::<_, i64>("approved") == 1 {
            return Ok(ApprovalOutcome::Approved);
        }
        drop(client);
        let Some(op) = self.get(operation_id).await? else {
            return Ok(ApprovalOutcome::NotFound);
        };
        if op.approval_status == "pending" && op.approval_expired {
            self.client().await?.execute(EXPIRE, &[&operation_id, &"pending"]).await?;
            return Ok(ApprovalOutcome::Expired);
        }
        if op.approval_status != "pending" || op.status != Status::NotStarted.as_str() {
            return Ok(ApprovalOutcome::NotPending { approval_status: op.approval_status, status: op.status });
        }
        if op.payload_hash != hash {
            return Ok(ApprovalOutcome::HashMismatch { stored: op.payload_hash });
        }
        // The row changed between the two reads (decided concurrently): report what it is now.
        let now = self.get(operation_id).await?.expect("operations are never deleted");
        Ok(ApprovalOutcome::NotPending { approval_status: now.approval_status, status: now.status })
    }

    /// Rejects a pending or approved operation that has not started: it is cancelled.
    pub async fn reject(&self, operation_id: &str, by: &str, reason: &str) -> Result<RejectOutcome, StoreError> {
        let Some(op) = self.get(operation_id).await? else {
            return Ok(RejectOutcome::NotFound);
        };
        if op.status() != Status::NotStarted || op.approval_status == "rejected" {
            return Ok(RejectOutcome::TooLate { status: op.status });
        }
        let actor = format!("approver:{by}");
        let t = Transition {
            reason: Some("approval_rejected"),
            evidence: Some(serde_json::json!({ "reason": reason })),
            approval_status: Some("rejected"),
            decided_by: Some(by),
            ..Transition::new(operation_id, Status::NotStarted, op.fence, Event::CancelBeforeStart, &actor)
        };
        match self.transition(t, None).await? {
            TransitionOutcome::Moved { .. } => Ok(RejectOutcome::Rejected),
            TransitionOutcome::Refused(_) | TransitionOutcome::Stale => {
                let now = self.get(operation_id).await?.expect("operations are never deleted");
                Ok(RejectOutcome::TooLate { status: now.status })
            }
        }
    }
}
