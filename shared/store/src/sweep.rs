//! The sweeper's queries: bounded batches over partial indexes, with `FOR UPDATE SKIP
//! LOCKED` so that several reconcile replicas share the work instead of repeating it.
//! Status changes still go through `transition_in` (expected status + fence).

use std::time::Duration;

use fleet_core::{Event, OpKey, OpRef, Reason, Status};
use serde_json::Value;

use crate::component::ReadOperations;
use crate::component::SweepAndLookUp;
use crate::transition::Param;
use crate::StoreAs;
use crate::{transition_in, StoreError, Transition, TransitionOutcome};

/// Ages of an operation's attempts by the database clock, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptAgesMs {
    pub newest: Option<u64>,
    pub newest_start: Option<u64>,
    pub oldest: Option<u64>,
}

/// One transition applied to every row a locking query selects.
struct BatchMove {
    select: &'static str,
    from: Status,
    event: Event,
    reason: Reason,
    /// Also mark the approval expired (through `fleet_expire_approval`, the one change to
    /// an approval column a worker's database role may make).
    expire_approval: bool,
}

/// The key of a row a sweep selected as (operation_id, tenant_id, …).
fn key_of(r: &tokio_postgres::Row) -> OpKey {
    OpKey::new(
        r.get::<_, String>("tenant_id"),
        r.get::<_, String>("operation_id"),
    )
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl<R: SweepAndLookUp> StoreAs<R> {
    /// Takes up to `batch` unknown, unescalated rows that are due for a lookup, and pushes
    /// their next lookup `recheck` into the future so no other replica takes them meanwhile.
    pub async fn take_due_unknown(
        &self,
        batch: i64,
        recheck: Duration,
    ) -> Result<Vec<OpKey>, StoreError> {
        self.keys(
            "UPDATE operations SET next_lookup_at = now() + make_interval(secs => $2)
             WHERE (operation_id, tenant_id) IN (
                SELECT operation_id, tenant_id FROM operations
                WHERE status = 'unknown' AND escalated_at IS NULL
                  AND (next_lookup_at IS NULL OR next_lookup_at <= now())
                ORDER BY next_lookup_at NULLS FIRST LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING operation_id, tenant_id",
            &[&batch, &secs(recheck)],
        )
        .await
    }

    /// Accepted rows past their deadline (each is then looked up; the CAS on status and
    /// fence keeps two replicas from both moving one). Escalated rows wait for a person
    /// and are left out, so they can never fill a batch and starve the others.
    pub async fn accepted_past_deadline(&self, batch: i64) -> Result<Vec<OpKey>, StoreError> {
        self.keys(
            "SELECT operation_id, tenant_id FROM operations WHERE status = 'accepted' AND deadline_at <= now()
               AND escalated_at IS NULL
             ORDER BY deadline_at LIMIT $1",
            &[&batch],
        )
        .await
    }

    /// Approved rows still waiting to start after `waited`: their doorbell may have been
    /// lost. Marks them (updated_at) so they are re-rung once per `waited`, not every sweep.
    pub async fn take_stranded_approved(
        &self,
        batch: i64,
        waited: Duration,
    ) -> Result<Vec<OpKey>, StoreError> {
        self.keys(
            "UPDATE operations SET updated_at = now()
             WHERE (operation_id, tenant_id) IN (
                SELECT operation_id, tenant_id FROM operations
                WHERE status = 'not_started' AND approval_status = 'approved' AND escalated_at IS NULL
                  AND updated_at <= now() - make_interval(secs => $2)
                ORDER BY updated_at LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING operation_id, tenant_id",
            &[&batch, &secs(waited)],
        )
        .await
    }

    /// The operations `sql` returns (`operation_id`, `tenant_id`).
    async fn keys(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<OpKey>, StoreError> {
        let rows = self.client().await?.query(sql, params).await?;
        Ok(rows.iter().map(key_of).collect())
    }

    /// Cancels up to `batch` rows that never started and whose approval window closed.
    pub async fn cancel_expired_approvals(&self, batch: i64) -> Result<usize, StoreError> {
        let expired = BatchMove {
            select: "SELECT operation_id, fence, tenant_id FROM operations
                     WHERE status = 'not_started' AND approval_expires_at <= now() AND escalated_at IS NULL
                     ORDER BY approval_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED",
            from: Status::NotStarted,
            event: Event::CancelBeforeStart,
            reason: Reason::ApprovalExpired,
            expire_approval: true,
        };
        Ok(self.move_batch(expired, batch).await?.len())
    }

    /// Locks a batch of rows (`select` returns operation_id, fence, tenant_id; `$1` is the batch
    /// size), applies the same transition to each through `transition_in`, and commits
    /// once. Returns the operations that moved.
    async fn move_batch(&self, m: BatchMove, batch: i64) -> Result<Vec<OpKey>, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let rows = tx.query(m.select, &[&batch]).await?;
        let mut moved = Vec::new();
        for r in &rows {
            let op = OpKey::new(r.get::<_, String>(2), r.get::<_, String>(0));
            let t = Transition {
                reason: Some(m.reason),
                ..Transition::new(op.op(), m.from, r.get(1), m.event, "reconcile")
            };
            // The approval is marked expired before the cancel, so that the event the
            // cancel writes carries the row as it is left (0086).
            if m.expire_approval {
                tx.execute(
                    "SELECT fleet_expire_approval($1, $2)",
                    &[&op.operation_id, &op.tenant_id],
                )
                .await?;
            }
            if let o @ TransitionOutcome::Moved { .. } = transition_in(&tx, t, None).await? {
                moved.push((op, o));
            }
        }
        tx.commit().await?;
        Ok(moved
            .into_iter()
            .map(|(op, o)| {
                o.observe(m.from);
                op
            })
            .collect())
    }
}

impl<R: ReadOperations> StoreAs<R> {
    /// Ages by the database clock. "Newest" is measured from the last moment a request of
    /// this operation could have reached the provider: the latest attempt's start or end,
    /// or the moment the row became unknown (an attempt that never finished lost its lease
    /// by then, and a worker never starts a call past two thirds of its lease). "Newest
    /// start" is the age of the latest attempt's start, from which the provider's maximum
    /// request time runs. An attempt whose send mark proves nothing was sent
    /// (migrations/0060_attempt_send_mark.sql) reached no provider and is not counted.
    pub async fn attempt_ages(&self, op: OpRef<'_>) -> Result<AttemptAgesMs, StoreError> {
        self.attempt_ages_before(op, i64::MAX).await
    }

    /// [`Store::attempt_ages`] over the attempts before `fence` only: what a new claim
    /// must respect before it repeats an uncertain create.
    pub async fn attempt_ages_before(
        &self,
        op: OpRef<'_>,
        fence: i64,
    ) -> Result<AttemptAgesMs, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT (EXTRACT(EPOCH FROM now() - GREATEST(max(a.started_at), max(a.finished_at), max(o.unknown_since))) * 1000)::float8,
                        (EXTRACT(EPOCH FROM now() - max(a.started_at)) * 1000)::float8,
                        (EXTRACT(EPOCH FROM now() - min(a.started_at)) * 1000)::float8
                 FROM attempts a JOIN operations o USING (operation_id, tenant_id)
                 WHERE a.operation_id = $1 AND a.tenant_id = $3 AND a.fence < $2
                   AND a.request_sent IS DISTINCT FROM false",
            )
            .await?;
        let r = client
            .query_one(&stmt, &[&op.operation_id, &fence, &op.tenant_id])
            .await?;
        let ms = |v: Option<f64>| v.map(|v| v.max(0.0) as u64);
        Ok(AttemptAgesMs {
            newest: ms(r.get(0)),
            newest_start: ms(r.get(1)),
            oldest: ms(r.get(2)),
        })
    }
}

impl<R: SweepAndLookUp> StoreAs<R> {
    /// Records one lookup in the operation's history, optionally counts it as failed and
    /// schedules the next one. Used when the lookup did not move the row.
    pub async fn record_lookup(
        &self,
        op: OpRef<'_>,
        fence: i64,
        evidence: &Value,
        failed: bool,
        next_in: Option<Duration>,
    ) -> Result<(), StoreError> {
        let lookup = Lookup {
            op,
            fence,
            evidence,
            failed,
            next_in,
        };
        record_lookup_on(&self.client().await?, lookup).await
    }

    /// Records one lookup of `t`'s operation at `t`'s fence (not failed, nothing
    /// scheduled) and applies the move `t` it justified, in one transaction: the history
    /// always shows the lookup behind a move.
    pub async fn record_lookup_and_move(
        &self,
        evidence: &Value,
        t: Transition<'_>,
    ) -> Result<TransitionOutcome, StoreError> {
        let from = t.expected;
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let lookup = Lookup {
            op: t.op,
            fence: t.fence,
            evidence,
            failed: false,
            next_in: None,
        };
        record_lookup_on(&tx, lookup).await?;
        let outcome = transition_in(&tx, t, None).await?;
        tx.commit().await?;
        outcome.observe(from);
        Ok(outcome)
    }
}

/// One lookup as the operation's history records it.
struct Lookup<'a> {
    op: OpRef<'a>,
    fence: i64,
    evidence: &'a Value,
    /// Counted as failed.
    failed: bool,
    /// When the next lookup is due; `None` leaves the schedule as it is.
    next_in: Option<Duration>,
}

/// As [`Store::record_lookup`], on the caller's client or transaction, so a lookup that
/// proves absence commits together with the move back to not_started.
async fn record_lookup_on(
    client: &impl deadpool_postgres::GenericClient,
    lookup: Lookup<'_>,
) -> Result<(), StoreError> {
    client
        .execute(
            "WITH bump AS (
                UPDATE operations SET
                    lookup_failures = lookup_failures + CASE WHEN $4 THEN 1 ELSE 0 END,
                    next_lookup_at = CASE WHEN $5::float8 IS NULL THEN next_lookup_at
                                          ELSE now() + make_interval(secs => $5) END
                WHERE operation_id = $1 AND tenant_id = $6 RETURNING operation_id, tenant_id)
             INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, evidence)
             SELECT operation_id, tenant_id, 'lookup', $2, 'reconcile', $3 FROM bump",
            &[
                &lookup.op.operation_id,
                &lookup.fence,
                lookup.evidence,
                &lookup.failed,
                &lookup.next_in.map(secs),
                &lookup.op.tenant_id,
            ],
        )
        .await?;
    Ok(())
}
