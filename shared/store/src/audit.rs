//! The post-settlement audit's queries: which succeeded operations are due for their one
//! extra lookup, and how its finding is recorded. Finding a duplicate never changes the
//! status (the effect happened); it escalates the row with both ids as evidence.

use std::time::Duration;

use fleet_core::{OpRef, Reason};
use serde_json::Value;

use crate::component::SweepAndLookUp;
use crate::rows::OPERATION_COLUMNS;
use crate::StoreAs;
use crate::{OperationRow, StoreError};

/// How long after settling each provider's operations are audited: its maximum request
/// time plus its search lag, by provider name. A provider not listed is audited after
/// `otherwise`.
#[derive(Debug, Clone)]
pub struct AuditDelays {
    pub by_provider: Vec<(String, Duration)>,
    pub otherwise: Duration,
}

const RECORD: &str = "
WITH audited AS (
    UPDATE operations SET audited_at = now(), next_lookup_at = NULL,
        escalated_at = CASE WHEN $2 THEN COALESCE(escalated_at, now()) ELSE escalated_at END
    WHERE operation_id = $1 AND tenant_id = $4 AND status = 'succeeded' AND audited_at IS NULL
    RETURNING operation_id, tenant_id, fence, status
)
INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor, reason, evidence)
SELECT operation_id, tenant_id, CASE WHEN $2 THEN 'escalated' ELSE 'audited' END, status, status, fence, 'reconcile',
       CASE WHEN $2 THEN $5::text ELSE $6::text END, $3
FROM audited
RETURNING 1";

impl<R: SweepAndLookUp> StoreAs<R> {
    /// Succeeded operations with an uncertain past whose audit is due, oldest first.
    pub async fn due_audits(
        &self,
        delays: &AuditDelays,
        batch: i64,
    ) -> Result<Vec<OperationRow>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {OPERATION_COLUMNS} FROM operations
                 WHERE status = 'succeeded' AND audited_at IS NULL AND (unknown_since IS NOT NULL OR attempts > 1)
                   AND resolved_at <= now() - make_interval(secs => COALESCE(
                       (SELECT d.secs FROM unnest($1::text[], $2::float8[]) AS d(provider, secs) WHERE d.provider = operations.provider),
                       $3::float8))
                   AND (next_lookup_at IS NULL OR next_lookup_at <= now())
                 ORDER BY resolved_at LIMIT $4"
            ))
            .await?;
        let (providers, secs): (Vec<&str>, Vec<f64>) = delays
            .by_provider
            .iter()
            .map(|(p, d)| (p.as_str(), d.as_secs_f64()))
            .unzip();
        let rows = client
            .query(
                &stmt,
                &[&providers, &secs, &delays.otherwise.as_secs_f64(), &batch],
            )
            .await?;
        rows.iter().map(OperationRow::from_row).collect()
    }

    /// Records the audit's finding once (a second auditor finds it done and records
    /// nothing). `duplicate` escalates the row. Returns whether this call recorded it.
    pub async fn record_audit(
        &self,
        op: OpRef<'_>,
        duplicate: bool,
        evidence: &Value,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(RECORD).await?;
        Ok(client
            .query_opt(
                &stmt,
                &[
                    &op.operation_id,
                    &duplicate,
                    evidence,
                    &op.tenant_id,
                    &Reason::DuplicateEffect.as_str(),
                    &Reason::SingleEffect.as_str(),
                ],
            )
            .await?
            .is_some())
    }

    /// The audit's lookup failed: try again after `recheck`.
    pub async fn postpone_audit(&self, op: OpRef<'_>, recheck: Duration) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE operations SET next_lookup_at = now() + make_interval(secs => $2::float8)
                 WHERE operation_id = $1 AND tenant_id = $3 AND status = 'succeeded' AND audited_at IS NULL",
                &[&op.operation_id, &recheck.as_secs_f64(), &op.tenant_id],
            )
            .await?;
        Ok(())
    }
}
