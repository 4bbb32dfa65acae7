//! Approval decisions. A person approves one exact snapshot hash; an operation is
//! approved once as many distinct people as its quorum requires (`approvals_required`)
//! have approved that hash before the window closed. Anything else is refused with the
//! reason, and nothing changes. Who may decide is not this module's question: callers ask
//! `fleet_core::authz` first.

use fleet_core::rejection::{judge_reject, RejectAsked, RejectVerdict, REJECTED};
use fleet_core::{
    judge_approval, ApprovalAsked, ApprovalStatus, ApprovalVerdict, Decider, Event, OpRef,
    PresentedSignature, Quorum, Status,
};

use crate::component::DecideApprovals;
use crate::transition::transition_in;
use crate::StoreAs;
use crate::{StoreError, Transition, TransitionOutcome};
use fleet_core::Reason;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalOutcome {
    /// This approval completed the quorum: the operation is approved and may run.
    Approved,
    /// Recorded; more distinct approvers are needed.
    Counted(Quorum),
    /// This principal had approved this same hash before: nothing new was written.
    AlreadyCounted,
    NotFound,
    /// The hash given is not the stored snapshot's: the approver saw something else
    /// (also answered once the operation is approved, and to a principal that approved
    /// the right hash before).
    HashMismatch {
        stored: String,
    },
    /// Rejected, cancelled or expired, or approved without this principal and no longer
    /// waiting for approvals.
    NotPending {
        approval_status: ApprovalStatus,
        status: Status,
    },
    Expired,
    /// The database refused to record it: the principal is not a live approver of the
    /// operation's tenant in the deployment's records (`approvals_of_a_pending_snapshot`).
    /// Nothing was written.
    NotRecordedApprover,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectOutcome {
    Rejected,
    /// Rejected before (by anyone): nothing changed.
    AlreadyRejected,
    NotFound,
    /// Nobody approved within the window: the approval expired, and stays so.
    Expired,
    /// Execution already began, the operation is final, or it waits for an operator
    /// (escalated): too late to reject.
    TooLate {
        status: Status,
    },
}

/// Holds the operation's row lock for the rest of the transaction, so that approvals of
/// one operation are decided one after the other and each sees the ones before it.
/// (`FOR NO KEY UPDATE` is the lock an UPDATE of the row takes; it does not block the
/// key-share locks that inserting rows referencing the operation takes.)
const LOCK: &str = "
SELECT approval_status, status, payload_hash, fence, approvals_required,
       approval_expires_at <= now() AS expired
FROM operations WHERE operation_id = $1 AND tenant_id = $2 FOR NO KEY UPDATE";

/// A rejection's read of the row, under the lock its move takes: what
/// `fleet_core::rejection::judge_reject` is asked, and the fence the move compares.
const REJECT_LOCK: &str = "
SELECT approval_status, status, fence, escalated_at IS NOT NULL AS escalated
FROM operations WHERE operation_id = $1 AND tenant_id = $2 FOR NO KEY UPDATE";

/// Sent right behind [`LOCK`] on the same connection (one round trip for both): the server
/// runs it after the lock is granted, so it sees an approval committed while this one
/// waited for the lock.
const APPROVED_BEFORE: &str =
    "SELECT EXISTS (SELECT 1 FROM approvals WHERE operation_id = $1 AND tenant_id = $3 AND principal = $2)";

/// Records the approval (`$4` the tenant; `$6`, `$7` and `$8` the key id, signature and
/// statement expiry, all null for an unsigned approval). Nothing is written if this
/// principal's approval is already there (only possible if the row lock did not
/// serialise approvers). The database refuses the row unless its principal is a live
/// approver of the tenant (`approvals_of_a_pending_snapshot`).
const RECORD: &str = "
INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, key_id, signature, signed_expires_at)
VALUES ($1, $4, $3, $5, $2, $6, $7, $8)
ON CONFLICT (operation_id, tenant_id, principal) DO NOTHING";

/// Run right after [`RECORD`], in the same transaction (so the approval just recorded is
/// seen): the approval's compare-and-set (written as every CAS is, see `rows.rs`; `$3` is
/// `pending`, `$4` `approved` and `$5` the status `not_started`, bound as parameters),
/// which approves only when the database's one quorum rule, `fleet_quorum_count`
/// (migrations/0055_live_approvers.sql), counts `approvals_required` approvals of the
/// stored hash by live approvers of the tenant and `signatures_required` of them signed by
/// their live keys: the rule the move's trigger and execute's claim apply too, so an
/// approval that leaves it short is recorded rather than refused. The history row is
/// written either way: `approved`, or `approval_recorded` (published as the
/// `approval_recorded` event) for an approval that leaves the quorum short. `$8` is the
/// tenant. The API verified this approval's signature itself before sending it.
const DECIDE: &str = "
WITH quorum AS (
    SELECT counted, signed FROM fleet_quorum_count($1, $8)
), approved AS (
    UPDATE operations SET approval_status = $4, approved_hash = $2, decided_by = $9,
        decided_at = now(), updated_at = now()
    WHERE operation_id = $1 AND tenant_id = $8 AND approval_status = $3 AND payload_hash = $2
      AND approval_expires_at > now() AND status = $5
      AND approvals_required <= (SELECT counted FROM quorum)
      AND signatures_required <= (SELECT signed FROM quorum)
    RETURNING operation_id
), event AS (
    INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, evidence, signed_in_with)
    SELECT $1, $8, CASE WHEN EXISTS (SELECT 1 FROM approved) THEN 'approved' ELSE 'approval_recorded' END,
           $7, $6, jsonb_build_object('approved_hash', $2::text, 'approvals_received', q.counted), $10
    FROM quorum q
)
SELECT (SELECT count(*) FROM approved) AS approved, (SELECT counted FROM quorum) AS received";

/// `$2` is `pending`, bound as a parameter (see `rows.rs`); `$4` is the reason
/// ([`Reason::ApprovalExpired`], by name).
const EXPIRE: &str = "
WITH expired AS (
    UPDATE operations SET approval_status = 'expired', updated_at = now()
    WHERE operation_id = $1 AND tenant_id = $3 AND approval_status = $2 AND approval_expires_at <= now()
    RETURNING operation_id, tenant_id, fence
)
INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, reason)
SELECT operation_id, tenant_id, 'approval_expired', fence, 'approver', $4::text FROM expired";

/// The actor of an approver's history rows.
fn approver(by: &Decider<'_>) -> String {
    format!("approver:{}", by.name)
}

impl<R: DecideApprovals> StoreAs<R> {
    /// Records `by`'s approval of `hash` (with the signature it presented, which the
    /// caller verified), and approves the operation if that completes its quorum. One
    /// transaction; the execute bell is the caller's to ring after it.
    pub async fn approve(
        &self,
        op: OpRef<'_>,
        hash: &str,
        by: &Decider<'_>,
        signed: Option<&PresentedSignature>,
    ) -> Result<ApprovalOutcome, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let lock = tx.prepare_cached(LOCK).await?;
        let before = tx.prepare_cached(APPROVED_BEFORE).await?;
        // Pipelined: both go out together and are answered in order.
        let OpRef {
            tenant_id,
            operation_id,
        } = op;
        let (lock_params, before_params) = (
            [&operation_id as _, &tenant_id as _],
            [&operation_id as _, &by.name as _, &tenant_id as _],
        );
        let (locked, before) = tokio::try_join!(
            tx.query_opt(&lock, &lock_params),
            tx.query_one(&before, &before_params),
        )?;
        let Some(row) = locked else {
            return Ok(ApprovalOutcome::NotFound);
        };
        // The CHECK constraints admit only known names.
        let approval_status = ApprovalStatus::parse(row.get(0)).expect("approval_status CHECK");
        let status = Status::parse(row.get(1)).expect("status CHECK");
        let stored_hash: String = row.get(2);
        let (fence, required, expired): (i64, i16, bool) = (row.get(3), row.get(4), row.get(5));
        let approved_before: bool = before.get(0);
        let asked = ApprovalAsked {
            approval: approval_status,
            status,
            expired,
            hash_matches: stored_hash == hash,
            asker_approved_before: approved_before,
        };
        let outcome = match judge_approval(asked) {
            ApprovalVerdict::AlreadyCounted => ApprovalOutcome::AlreadyCounted,
            ApprovalVerdict::NotPending => ApprovalOutcome::NotPending {
                approval_status,
                status,
            },
            ApprovalVerdict::HashMismatch => ApprovalOutcome::HashMismatch {
                stored: stored_hash,
            },
            ApprovalVerdict::Expire => {
                let pending = ApprovalStatus::Pending.as_str();
                tx.execute(
                    EXPIRE,
                    &[
                        &operation_id,
                        &pending,
                        &tenant_id,
                        &Reason::ApprovalExpired.as_str(),
                    ],
                )
                .await?;
                ApprovalOutcome::Expired
            }
            ApprovalVerdict::Count => {
                let signed_in_with = by.signed_in_with.as_str();
                let key_id = signed.map(|s| s.key_id.as_str());
                let signature = signed.map(|s| s.signature.to_bytes().to_vec());
                let signed_expires_at = signed.map(|s| s.expires_at);
                let record = tx.prepare_cached(RECORD).await?;
                let recorded = match tx
                    .execute(
                        &record,
                        &[
                            &operation_id,
                            &hash,
                            &by.name,
                            &tenant_id,
                            &signed_in_with,
                            &key_id,
                            &signature,
                            &signed_expires_at,
                        ],
                    )
                    .await
                {
                    Ok(recorded) => recorded,
                    // Everything else the trigger checks was judged above under the row
                    // lock: what is left is who the principal is in the records.
                    Err(e)
                        if e.as_db_error().and_then(|d| d.constraint())
                            == Some("approvals_of_a_pending_snapshot") =>
                    {
                        return Ok(ApprovalOutcome::NotRecordedApprover);
                    }
                    Err(e) => return Err(e.into()),
                };
                if recorded == 0 {
                    // Only reachable if the row lock did not serialise approvers.
                    ApprovalOutcome::AlreadyCounted
                } else {
                    let decide = tx.prepare_cached(DECIDE).await?;
                    let actor = approver(by);
                    let not_started = Status::NotStarted.as_str();
                    let pending = ApprovalStatus::Pending.as_str();
                    let approved = ApprovalStatus::Approved.as_str();
                    let row = tx
                        .query_one(
                            &decide,
                            &[
                                &operation_id,
                                &hash,
                                &pending,
                                &approved,
                                &not_started,
                                &actor,
                                &fence,
                                &tenant_id,
                                &by.name,
                                &signed_in_with,
                            ],
                        )
                        .await?;
                    if row.get::<_, i64>("approved") == 1 {
                        ApprovalOutcome::Approved
                    } else {
                        ApprovalOutcome::Counted(Quorum {
                            received: row.get("received"),
                            required: i64::from(required),
                        })
                    }
                }
            }
        };
        tx.commit().await?;
        Ok(outcome)
    }

    /// Rejects a pending or approved operation that has not started: it is cancelled. A
    /// rejection of a rejected operation changes nothing and says so. What happens is
    /// `fleet_core::rejection`'s judgement of the row as read; this applies it. The row is
    /// read under its lock and moved in the same transaction, so the judgement is of the
    /// row the move changes: a row escalated, expired or claimed while the rejection was
    /// on its way is answered as if it had been seen so first, never refused by the
    /// database half-way.
    pub async fn reject(
        &self,
        key: OpRef<'_>,
        by: &Decider<'_>,
        reason: &str,
    ) -> Result<RejectOutcome, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let lock = tx.prepare_cached(REJECT_LOCK).await?;
        let Some(row) = tx
            .query_opt(&lock, &[&key.operation_id, &key.tenant_id])
            .await?
        else {
            return Ok(RejectOutcome::NotFound);
        };
        // The CHECK constraints admit only known names.
        let approval = ApprovalStatus::parse(row.get(0)).expect("approval_status CHECK");
        let status = Status::parse(row.get(1)).expect("status CHECK");
        let (fence, escalated): (i64, bool) = (row.get(2), row.get(3));
        let asked = RejectAsked {
            approval,
            status,
            escalated,
        };
        match judge_reject(asked) {
            RejectVerdict::Reject => {}
            RejectVerdict::AlreadyRejected => return Ok(RejectOutcome::AlreadyRejected),
            RejectVerdict::Expired => return Ok(RejectOutcome::Expired),
            RejectVerdict::TooLate => return Ok(RejectOutcome::TooLate { status }),
        }
        let actor = approver(by);
        let t = Transition {
            reason: Some(Reason::ApprovalRejected),
            evidence: Some(serde_json::json!({ "reason": reason })),
            approval_status: Some(REJECTED.1),
            decided_by: Some(by.name),
            signed_in_with: Some(by.signed_in_with.as_str()),
            ..Transition::new(key, status, fence, Event::CancelBeforeStart, &actor)
        };
        let moved = transition_in(&tx, t, None).await?;
        tx.commit().await?;
        moved.observe(status);
        match moved {
            TransitionOutcome::Moved { .. } => Ok(RejectOutcome::Rejected),
            // The row is locked and was judged rejectable: the state table and the
            // compare-and-set agree with the judgement, so this is not reached.
            TransitionOutcome::Refused(_) | TransitionOutcome::Stale => {
                Ok(RejectOutcome::TooLate { status })
            }
        }
    }
}
