//! What the console shows, always scoped to the tenants of the person asking: the
//! approval inbox (soonest expiry first), the operator's queue (unknown and escalated
//! operations), a search, and one operation with its view and the time left to decide
//! by the database clock.

use chrono::{DateTime, Utc};
use fleet_core::{OpRef, OperationView, Reason, Status};
use tokio_postgres::Row;

use crate::component::ReadViews;
use crate::rows::{reason_at, OPERATION_COLUMNS};
use crate::transition::Param;
use crate::StoreAs;
use crate::{OperationRow, StoreError};

/// One operation as the console shows it.
#[derive(Debug, Clone)]
pub struct ConsoleOperation {
    pub row: OperationRow,
    /// The SQL function `operation_view`'s answer (the API's and the events' view).
    pub view: OperationView,
    /// Seconds until the approval expires, by the database clock (negative once past).
    pub expires_in_s: i64,
    /// The reason of the latest event that gave one (why it is unknown or escalated).
    pub latest_reason: Option<Reason>,
}

/// One approval of an operation's stored hash, as the approval page lists it.
#[derive(Debug, Clone)]
pub struct ApprovalGiven {
    pub principal: String,
    pub at: DateTime<Utc>,
    pub signed: bool,
    pub signed_in_with: String,
}

/// What the operations search keeps; every filter is optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct OperationSearch<'a> {
    /// The whole id, or its beginning.
    pub id_prefix: Option<&'a str>,
    pub status: Option<Status>,
    /// One of the caller's tenants.
    pub tenant: Option<&'a str>,
}

/// The operator queue's condition and order (`$1` the tenants, `$2` the limit; public for
/// the test that checks what it reads). The operations waiting are found first, each set
/// by its own partial index (unknown, escalated), and then read by primary key. Written as
/// one condition over the tenant's operations, the planner walked the tenant's index by
/// creation time, its whole history, for the few that wait, on every view of the queue.
pub const OPERATOR_QUEUE: &str = "WHERE o.operation_id = ANY (ARRAY(
        SELECT operation_id FROM operations WHERE status = 'unknown'
        UNION
        SELECT operation_id FROM operations
        WHERE escalated_at IS NOT NULL AND (resolved_at IS NULL OR escalated_at > resolved_at)))
    AND o.tenant_id = ANY($1)
    AND (o.status = 'unknown'
         OR (o.escalated_at IS NOT NULL AND (o.resolved_at IS NULL OR o.escalated_at > o.resolved_at)))
ORDER BY COALESCE(o.escalated_at, o.unknown_since, o.updated_at), o.operation_id LIMIT $2";

fn select(where_order: &str) -> String {
    format!(
        "SELECT {OPERATION_COLUMNS}, operation_view(o) AS view,
                floor(EXTRACT(EPOCH FROM o.approval_expires_at - now()))::bigint AS expires_in_s,
                (SELECT e.reason FROM operation_events e
                 WHERE e.operation_id = o.operation_id AND e.tenant_id = o.tenant_id
                   AND e.reason IS NOT NULL
                 ORDER BY e.id DESC LIMIT 1) AS latest_reason
         FROM operations o {where_order}"
    )
}

fn console_operation(r: &Row) -> Result<ConsoleOperation, StoreError> {
    Ok(ConsoleOperation {
        row: OperationRow::from_row(r)?,
        view: crate::views::typed_view(r.try_get("view")?)?,
        expires_in_s: r.get("expires_in_s"),
        latest_reason: reason_at(r, "latest_reason")?,
    })
}

impl<R: ReadViews> StoreAs<R> {
    /// One operation (the caller located it among the person's tenants first).
    pub async fn console_operation(
        &self,
        op: OpRef<'_>,
    ) -> Result<Option<ConsoleOperation>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&select("WHERE o.operation_id = $1 AND o.tenant_id = $2"))
            .await?;
        client
            .query_opt(&stmt, &[&op.operation_id, &op.tenant_id])
            .await?
            .as_ref()
            .map(console_operation)
            .transpose()
    }

    /// Who approved the operation's stored hash so far, first first.
    pub async fn approvals_given(&self, op: OpRef<'_>) -> Result<Vec<ApprovalGiven>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT a.principal, a.at, a.signature IS NOT NULL AS signed, a.signed_in_with
                 FROM approvals a JOIN operations o USING (operation_id, tenant_id)
                 WHERE a.operation_id = $1 AND a.tenant_id = $2 AND a.payload_hash = o.payload_hash
                 ORDER BY a.at, a.principal",
                &[&op.operation_id, &op.tenant_id],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| ApprovalGiven {
                principal: r.get("principal"),
                at: r.get("at"),
                signed: r.get("signed"),
                signed_in_with: r.get("signed_in_with"),
            })
            .collect())
    }

    /// Approvals waiting for a person in `tenants`, soonest expiry first. The statuses
    /// are written into the text so the partial index on unstarted rows serves it, read by
    /// an index scan (`index_reads`): by bitmap, every view of the inbox read an entry for
    /// every operation approved or expired since the last vacuum.
    pub async fn approval_inbox(
        &self,
        tenants: &[String],
        limit: i64,
    ) -> Result<Vec<ConsoleOperation>, StoreError> {
        let rows = self
            .by_index_scans(
                &select(
                    "WHERE o.status = 'not_started' AND o.approval_status = 'pending'
                       AND o.approval_expires_at > now() AND o.tenant_id = ANY($1)
                     ORDER BY o.approval_expires_at, o.operation_id LIMIT $2",
                ),
                &[&tenants, &limit],
            )
            .await?;
        rows.iter().map(console_operation).collect()
    }

    /// Operations waiting for an operator in `tenants`: unknown ones, and escalated ones
    /// not resolved since; the longest waiting first. Read as [`OPERATOR_QUEUE`] says, by
    /// index scans (`index_reads`).
    pub async fn operator_queue(
        &self,
        tenants: &[String],
        limit: i64,
    ) -> Result<Vec<ConsoleOperation>, StoreError> {
        let rows = self
            .by_index_scans(&select(OPERATOR_QUEUE), &[&tenants, &limit])
            .await?;
        rows.iter().map(console_operation).collect()
    }

    /// Operations of `tenants` matching `search`, newest first.
    pub async fn search_operations(
        &self,
        tenants: &[String],
        search: OperationSearch<'_>,
        limit: i64,
    ) -> Result<Vec<ConsoleOperation>, StoreError> {
        self.console_operations(
            "WHERE o.tenant_id = ANY($1)
               AND ($2::text IS NULL OR starts_with(o.operation_id, $2))
               AND ($3::text IS NULL OR o.status = $3)
               AND ($4::text IS NULL OR o.tenant_id = $4)
             ORDER BY o.created_at DESC, o.operation_id DESC LIMIT $5",
            &[
                &tenants,
                &search.id_prefix,
                &search.status.map(Status::as_str),
                &search.tenant,
                &limit,
            ],
        )
        .await
    }

    /// The operations `filter` (a WHERE … ORDER BY … LIMIT clause over `o`) selects, as
    /// the console shows them.
    async fn console_operations(
        &self,
        filter: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<ConsoleOperation>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(&select(filter)).await?;
        let rows = client.query(&stmt, params).await?;
        rows.iter().map(console_operation).collect()
    }
}
