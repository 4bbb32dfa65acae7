//! Reads for operators and workers: one operation, its attempts and events, lists.

use fleet_core::{OpRef, Status};

use crate::component::ReadOperations;
use crate::many_rows::Param;
use crate::rows::OPERATION_COLUMNS;
use crate::StoreAs;
use crate::{AttemptRow, EventRow, OperationRow, StoreError};
use tokio_postgres::Row;

impl<R: ReadOperations> StoreAs<R> {
    pub async fn get(&self, op: OpRef<'_>) -> Result<Option<OperationRow>, StoreError> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT {OPERATION_COLUMNS} FROM operations WHERE operation_id = $1 AND tenant_id = $2"
        );
        let stmt = client.prepare_cached(&sql).await?;
        client
            .query_opt(&stmt, &[&op.operation_id, &op.tenant_id])
            .await?
            .as_ref()
            .map(OperationRow::from_row)
            .transpose()
    }

    /// Newest first, at most `limit` rows.
    pub async fn list(
        &self,
        status: Option<Status>,
        escalated_only: bool,
        limit: i64,
    ) -> Result<Vec<OperationRow>, StoreError> {
        let client = self.client().await?;
        // The status is written into the text (a name from the typed enum, a fixed set),
        // not bound: the pool plans generically (see `pool.rs`), and only a literal lets
        // a rare status such as `unknown` be read through its index.
        let by_status = match status {
            Some(s) => format!("status = '{}'", s.as_str()),
            None => "true".to_owned(),
        };
        let sql = format!(
            "SELECT {OPERATION_COLUMNS} FROM operations
             WHERE {by_status} AND (NOT $1 OR escalated_at IS NOT NULL)
             ORDER BY created_at DESC, operation_id DESC LIMIT $2"
        );
        let rows = client.query(&sql, &[&escalated_only, &limit]).await?;
        rows.iter().map(OperationRow::from_row).collect()
    }

    /// The tenants holding an operation with this id, in order: what a caller that named
    /// only the id may mean (a doorbell from before bells named the tenant, `fleetctl`).
    pub async fn tenants_of(&self, operation_id: &str) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT tenant_id FROM operations WHERE operation_id = $1 ORDER BY tenant_id",
                &[&operation_id],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub async fn attempts(&self, op: OpRef<'_>) -> Result<Vec<AttemptRow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT * FROM attempts WHERE operation_id = $1 AND tenant_id = $2 ORDER BY fence",
                &[&op.operation_id, &op.tenant_id],
            )
            .await?;
        rows.iter().map(AttemptRow::from_row).collect()
    }

    pub async fn events(&self, op: OpRef<'_>) -> Result<Vec<EventRow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT * FROM operation_events WHERE operation_id = $1 AND tenant_id = $2 ORDER BY id",
                &[&op.operation_id, &op.tenant_id],
            )
            .await?;
        rows.iter().map(EventRow::from_row).collect()
    }

    /// Up to `limit` history rows of the operation after the row numbered `after` (from
    /// the first without one), oldest first: a page of its story. Row numbers only grow, so
    /// a page starts strictly after the last one read whatever was written meanwhile.
    pub async fn events_page(
        &self,
        op: OpRef<'_>,
        after: Option<i64>,
        limit: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT * FROM operation_events
                 WHERE operation_id = $1 AND tenant_id = $2 AND id > $3
                 ORDER BY id LIMIT $4",
                &[&op.operation_id, &op.tenant_id, &after.unwrap_or(0), &limit],
            )
            .await?;
        rows.iter().map(EventRow::from_row).collect()
    }

    /// Counts by status, for summaries and fleet-wide gauges.
    pub async fn count_by_status(&self) -> Result<Vec<(Status, i64)>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT status, count(*) FROM operations GROUP BY status ORDER BY status",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let status = Status::parse(r.get(0))
                    .expect("the status CHECK constraint admits only known names");
                (status, r.get(1))
            })
            .collect())
    }
}

/// Fleet-wide figures for the gauges, computed from the rows (the truth) by one
/// component. Each sub-query is served by a partial index, read by an index scan (see
/// `index_reads`), so the cost follows the number of non-final rows, not the history.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FleetGauges {
    pub unknown: i64,
    pub escalated: i64,
    pub oldest_unknown_age_s: f64,
    pub in_progress: i64,
    pub accepted: i64,
    pub ready: i64,
    /// Operator decisions ever recorded (append-only, so it only grows).
    pub operator_decisions: i64,
}

/// The gauges' one statement (public for the tests that check its plan).
pub const FLEET_GAUGES: &str = "SELECT
    (SELECT count(*) FROM operations WHERE status = 'unknown') AS unknown,
    (SELECT count(*) FROM operations WHERE escalated_at IS NOT NULL
       AND (resolved_at IS NULL OR escalated_at > resolved_at)) AS escalated,
    (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(unknown_since)), 0)::float8
       FROM operations WHERE status = 'unknown') AS oldest_unknown_age_s,
    (SELECT count(*) FROM operations WHERE status = 'in_progress') AS in_progress,
    (SELECT count(*) FROM operations WHERE status = 'accepted') AS accepted,
    (SELECT count(*) FROM operations WHERE status = 'not_started' AND approval_status = 'approved') AS ready,
    (SELECT count(*) FROM operation_events WHERE actor LIKE 'operator:%') AS operator_decisions";

impl<R: ReadOperations> StoreAs<R> {
    /// The one row of `sql`, a statement of aggregates without `GROUP BY`, read by index
    /// scans (see `index_reads`).
    async fn counted(&self, sql: &str, params: &[Param<'_>]) -> Result<Row, StoreError> {
        let mut rows = self.by_index_scans(sql, params).await?;
        Ok(rows.swap_remove(0))
    }

    pub async fn fleet_gauges(&self) -> Result<FleetGauges, StoreError> {
        let r = self.counted(FLEET_GAUGES, &[]).await?;
        Ok(FleetGauges {
            unknown: r.get("unknown"),
            escalated: r.get("escalated"),
            oldest_unknown_age_s: r.get("oldest_unknown_age_s"),
            in_progress: r.get("in_progress"),
            accepted: r.get("accepted"),
            ready: r.get("ready"),
            operator_decisions: r.get("operator_decisions"),
        })
    }
}

/// The approvals waiting for people, for the fleet-wide gauges: pending operations whose
/// window is still open, and those of them that close within the given window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalGauges {
    pub pending: i64,
    pub expiring_soon: i64,
}

/// The approval gauges' statement (public for the tests that check what it reads).
pub const APPROVAL_GAUGES: &str = "SELECT count(*) AS pending,
       count(*) FILTER (WHERE approval_expires_at <= now() + make_interval(secs => $1)) AS expiring_soon
FROM operations
WHERE status = 'not_started' AND approval_status = 'pending' AND approval_expires_at > now()";

impl<R: ReadOperations> StoreAs<R> {
    /// Read through the partial index on not-started rows' expiry, so the cost follows
    /// the rows waiting to start, not the history.
    pub async fn approval_gauges(
        &self,
        expiring_within_s: f64,
    ) -> Result<ApprovalGauges, StoreError> {
        let r = self.counted(APPROVAL_GAUGES, &[&expiring_within_s]).await?;
        Ok(ApprovalGauges {
            pending: r.get("pending"),
            expiring_soon: r.get("expiring_soon"),
        })
    }
}
