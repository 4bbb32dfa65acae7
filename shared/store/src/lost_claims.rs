//! What becomes of a claim: its durable send mark, written before its request goes out,
//! and, when the claim is lost (lease run out, worker killed), the move its mark allows
//! (migrations/0060_attempt_send_mark.sql).
//!
//! The attempt row is inserted with `request_sent = false` by the claim. Right before the
//! request is handed to the network (after its rate slot came), execute commits `true`
//! ([`StoreAs::mark_request_sent`]); from then on the request may have left. A lost claim
//! whose mark is still false sent nothing: it is released to `not_started` with no lookup
//! (`fleet_core::reconcile::lost_claim_move`). Any other lost claim is `unknown`.
//!
//! The mark and the release serialize on the attempt row: the release first finishes the
//! attempt (`finished_at`) where the mark is still false, taking the row's lock and
//! re-reading it after any mark in flight; the mark is written only on an unfinished
//! attempt. So either the mark committed first (the release sees `true`: unknown), or the
//! release did (the mark finds the attempt finished: nothing is sent).

use fleet_core::reconcile::{lost_claim_move, SendMark};
use fleet_core::{OpKey, OpRef, Status};

use crate::component::{ClaimAndCall, SweepAndLookUp};
use crate::StoreAs;
use crate::{transition_in, StoreError, Transition, TransitionOutcome};

/// Writes the mark, only on the unfinished attempt of a claim whose lease is still live.
pub(crate) const MARK_SENT: &str = "
UPDATE attempts a SET request_sent = true
WHERE a.operation_id = $1 AND a.tenant_id = $2 AND a.fence = $3
  AND a.request_sent IS NOT NULL AND a.finished_at IS NULL
  AND EXISTS (SELECT FROM operations o
              WHERE o.operation_id = a.operation_id AND o.tenant_id = a.tenant_id
                AND o.fence = a.fence AND o.status = $4 AND o.lease_expires_at > now())";

/// [`MARK_SENT`] for the marks that overlap in time, in one statement and so one commit:
/// each attempt row still by its own conditions. Only the worker holding a claim marks its
/// attempt, so two batches never meet on a row; a statement that fails for any other
/// reason (a deadlock with the lease sweeper) fails the batch, and its marks are then
/// written one by one.
const MARK_SENT_MANY: &str = "
UPDATE attempts a SET request_sent = true
FROM unnest($1::text[], $2::text[], $3::int8[]) AS m(operation_id, tenant_id, fence)
WHERE a.operation_id = m.operation_id AND a.tenant_id = m.tenant_id AND a.fence = m.fence
  AND a.request_sent IS NOT NULL AND a.finished_at IS NULL
  AND EXISTS (SELECT FROM operations o
              WHERE o.operation_id = a.operation_id AND o.tenant_id = a.tenant_id
                AND o.fence = a.fence AND o.status = $4 AND o.lease_expires_at > now())
RETURNING a.tenant_id, a.operation_id, a.fence";

/// The worker's own record of a claim it lost: not executed when its mark proves nothing
/// was sent, unknown otherwise.
const RECORD_LOST: &str = "
UPDATE attempts SET finished_at = now(),
    outcome = CASE WHEN request_sent IS FALSE THEN 'not_executed' ELSE 'unknown' END,
    detail = CASE WHEN request_sent IS FALSE THEN 'not sent: ' || $4 ELSE $4 END
WHERE operation_id = $1 AND tenant_id = $2 AND fence = $3 AND finished_at IS NULL";

/// Reconcile's side: finishes the attempt of a lost claim whose mark is still false (an
/// attempt the worker finished keeps what it said). One row: provably nothing sent.
const FINISH_UNSENT: &str = "
UPDATE attempts SET finished_at = COALESCE(finished_at, now()),
    outcome = COALESCE(outcome, 'not_executed'),
    detail = COALESCE(detail, 'not sent: the claim was lost before its request was sent')
WHERE operation_id = $1 AND tenant_id = $2 AND fence = $3 AND request_sent IS FALSE
RETURNING 1";

/// The in_progress rows whose lease ran out, oldest first, locked for this sweep.
const EXPIRED: &str = "
SELECT operation_id, fence, tenant_id FROM operations
WHERE status = 'in_progress' AND lease_expires_at <= now() AND escalated_at IS NULL
ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED";

/// What a sweep did with the claims whose lease ran out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpiredLeases {
    /// Their request may have left: now `unknown`.
    pub unknown: Vec<OpKey>,
    /// Provably nothing sent: back to `not_started` (ring execute).
    pub released: Vec<OpKey>,
}

/// What one lost claim became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostClaim {
    /// Now `unknown`: its request may have left.
    Unknown,
    /// Back to `not_started`: provably nothing was sent.
    Released,
    /// Someone else moved the row first.
    Stale,
}

impl<R: ClaimAndCall> StoreAs<R> {
    /// Commits the claim's send mark right before its request goes out. `false`: the
    /// attempt is finished or the lease is no longer live, and nothing may be sent.
    pub async fn mark_request_sent(&self, op: OpRef<'_>, fence: i64) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(MARK_SENT).await?;
        let held = Status::InProgress.as_str();
        Ok(client
            .execute(&stmt, &[&op.operation_id, &op.tenant_id, &fence, &held])
            .await?
            == 1)
    }

    /// [`Self::mark_request_sent`] for several claims in one commit: the claims (key and
    /// fence) whose mark was written. A claim missing from the answer may send nothing.
    pub async fn mark_requests_sent(
        &self,
        claims: &[(OpRef<'_>, i64)],
    ) -> Result<Vec<(OpKey, i64)>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(MARK_SENT_MANY).await?;
        let ops: Vec<&str> = claims.iter().map(|(op, _)| op.operation_id).collect();
        let tenants: Vec<&str> = claims.iter().map(|(op, _)| op.tenant_id).collect();
        let fences: Vec<i64> = claims.iter().map(|(_, fence)| *fence).collect();
        let held = Status::InProgress.as_str();
        let rows = client
            .query(&stmt, &[&ops, &tenants, &fences, &held])
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    OpKey::new(r.get::<_, String>(0), r.get::<_, String>(1)),
                    r.get(2),
                )
            })
            .collect())
    }

    /// Records the attempt of a claim this worker lost (its lease): `not_executed`, with
    /// `detail` after "not sent: ", when its mark proves nothing was sent; `unknown`,
    /// with `detail`, otherwise.
    pub async fn record_lost_claim(
        &self,
        op: OpRef<'_>,
        fence: i64,
        detail: &str,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(RECORD_LOST).await?;
        client
            .execute(&stmt, &[&op.operation_id, &op.tenant_id, &fence, &detail])
            .await?;
        Ok(())
    }
}

/// Moves one lost claim as its mark allows, in the caller's transaction.
async fn move_lost_claim(
    tx: &deadpool_postgres::Transaction<'_>,
    op: OpRef<'_>,
    fence: i64,
) -> Result<(LostClaim, TransitionOutcome), StoreError> {
    let unsent = !tx
        .query(FINISH_UNSENT, &[&op.operation_id, &op.tenant_id, &fence])
        .await?
        .is_empty();
    let mark = if unsent {
        SendMark::NotSent
    } else {
        SendMark::MaybeSent
    };
    let step = lost_claim_move(mark);
    let t = Transition {
        reason: Some(step.reason),
        ..Transition::new(op, step.from, fence, step.event, "reconcile")
    };
    let moved = transition_in(tx, t, None).await?;
    let lost = match (&moved, mark) {
        (TransitionOutcome::Moved { .. }, SendMark::NotSent) => LostClaim::Released,
        (TransitionOutcome::Moved { .. }, SendMark::MaybeSent) => LostClaim::Unknown,
        _ => LostClaim::Stale,
    };
    Ok((lost, moved))
}

impl<R: SweepAndLookUp> StoreAs<R> {
    /// Moves up to `batch` in_progress rows whose lease expired, in one transaction:
    /// released when their mark proves nothing was sent, `unknown` otherwise.
    pub async fn expire_leases(&self, batch: i64) -> Result<ExpiredLeases, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let rows = tx.query(EXPIRED, &[&batch]).await?;
        let mut moved = Vec::new();
        for r in &rows {
            let op = OpKey::new(r.get::<_, String>(2), r.get::<_, String>(0));
            let (lost, outcome) = move_lost_claim(&tx, op.op(), r.get(1)).await?;
            moved.push((op, lost, outcome));
        }
        tx.commit().await?;
        let mut expired = ExpiredLeases::default();
        for (op, lost, outcome) in moved {
            outcome.observe(Status::InProgress);
            match lost {
                LostClaim::Released => expired.released.push(op),
                LostClaim::Unknown => expired.unknown.push(op),
                LostClaim::Stale => {}
            }
        }
        Ok(expired)
    }

    /// [`StoreAs::expire_leases`] for the one row `op` at `fence`, read with an expired
    /// lease.
    pub async fn expire_lease(&self, op: OpRef<'_>, fence: i64) -> Result<LostClaim, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let (lost, outcome) = move_lost_claim(&tx, op, fence).await?;
        if lost == LostClaim::Stale {
            // Nothing moved: the attempt stays as it was.
            tx.rollback().await?;
            return Ok(lost);
        }
        tx.commit().await?;
        outcome.observe(Status::InProgress);
        Ok(lost)
    }
}
