//! The claim: one compare-and-set that bumps the fence, takes the lease (timed by the
//! database clock) and writes the attempt row, before any provider call.

use fleet_core::Status;

use crate::rows::{OPERATION_COLUMNS, TARGET};
use crate::{OperationRow, Store, StoreError};

#[derive(Debug, Clone)]
pub struct ClaimedOperation {
    /// The row as it is after the claim (status in_progress, the new fence).
    pub row: OperationRow,
    pub fence: i64,
}

#[derive(Debug, Clone)]
pub enum Claim {
    Claimed(Box<ClaimedOperation>),
    /// Nothing was claimed; the caller reads the row and acts on what it says.
    NotClaimable,
}

fn claim_sql() -> String {
    format!(
        "WITH {TARGET}, claimed AS (
            UPDATE operations SET status = 'in_progress', fence = fence + 1, lease_owner = $2,
                lease_expires_at = now() + make_interval(secs => $3::float8 / 1000.0), attempts = attempts + 1,
                updated_at = now()
            FROM target WHERE operations.ctid = target.ctid AND status = 'not_started'
              AND ($4::bigint IS NULL OR fence = $4)
              AND (cardinality($5::text[]) = 0 OR policy_version = ANY($5::text[]))
              AND approval_status = 'approved' AND approval_expires_at > now()
              AND approved_hash = payload_hash AND escalated_at IS NULL
            RETURNING {OPERATION_COLUMNS}
        ), attempt AS (
            INSERT INTO attempts (operation_id, fence, worker) SELECT operation_id, fence, $2 FROM claimed
        ), event AS (
            INSERT INTO operation_events (operation_id, kind, from_status, to_status, fence, actor)
            SELECT operation_id, 'transition', 'not_started', 'in_progress', fence, 'execute' FROM claimed
        )
        SELECT * FROM claimed"
    )
}

impl Store {
    /// Claims an approved, unexpired `not_started` row whose fence is still `read_fence`.
    pub async fn claim(&self, operation_id: &str, read_fence: i64, owner: &str, lease_ttl_ms: i64) -> Result<Claim, StoreError> {
        self.claim_where(operation_id, Some(read_fence), &[], owner, lease_ttl_ms).await
    }

    /// Claims without reading first: an approved, unexpired `not_started` row under one of
    /// `policies` (any, when empty). The compare-and-set on status alone is enough, since
    /// the claim bumps the fence in the same statement; the happy path costs one statement.
    pub async fn claim_ready(&self, operation_id: &str, policies: &[String], owner: &str, lease_ttl_ms: i64) -> Result<Claim, StoreError> {
        self.claim_where(operation_id, None, policies, owner, lease_ttl_ms).await
    }

    async fn claim_where(&self, operation_id: &str, read_fence: Option<i64>, policies: &[String], owner: &str, lease_ttl_ms: i64) -> Result<Claim, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(&claim_sql()).await?;
        let ttl = lease_ttl_ms as f64;
        Ok(match client.query_opt(&stmt, &[&operation_id, &owner, &ttl, &read_fence, &policies]).await? {
            Some(r) => {
                let row = OperationRow::from_row(&r);
                crate::transition::observe(Status::NotStarted, Status::InProgress, None, None);
                Claim::Claimed(Box::new(ClaimedOperation { fence: row.fence, row }))
            }
            None => Claim::NotClaimable,
        })
    }

    /// Extends a held lease. `false` means fenced out: the lease is gone.
    pub async fn renew_lease(&self, operation_id: &str, fence: i64, lease_ttl_ms: i64) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                &format!(
                    "WITH {TARGET} UPDATE operations SET lease_expires_at = now() + make_interval(secs => $3::float8 / 1000.0)
                     FROM target WHERE operations.ctid = target.ctid AND fence = $2 AND status = 'in_progress' AND lease_expires_at > now()"
                ),
            )
            .await?;
        Ok(client.execute(&stmt, &[&operation_id, &fence, &(lease_ttl_ms as f64)]).await? == 1)
    }
}
