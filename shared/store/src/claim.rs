//! The claim: one compare-and-set that bumps the fence, takes the lease (timed by the
//! database clock) and writes the attempt row, before any provider call.

use deadpool_postgres::GenericClient;
use fleet_core::{ApprovalStatus, OpRef, Status};

use crate::component::ClaimAndCall;
use crate::rows::OPERATION_COLUMNS;
use crate::transition::Param;
use crate::StoreAs;
use crate::{OperationRow, StoreError};

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

/// The claim's compare-and-set (written as every CAS is, see `rows.rs`), over the primary
/// keys in `$1`: one operation, or the ready operations of several doorbells at once.
/// Each row moves on its own status (and, given `$4`, fence) compare-and-set and gets its
/// own attempt and event rows.
///
/// The keys are matched with `operation_id = ANY($1)`, which only the primary key (id,
/// tenant) can answer (no index has `status` as a plain column), so the plan is a primary-key lookup
/// whatever the table's size when the connection planned it. A join with `unnest($1)`
/// was planned, on a near-empty table, as a sequential scan joined to the keys, and that
/// generic plan stayed cached while the table grew: every claim then read the whole
/// table. Rows are locked in the order the scan meets them; two claims of overlapping
/// sets that deadlock anyway fail, and the batch is then retried claim by claim.
/// `$6`, `$7` and `$8` are the statuses `not_started`, `in_progress` and `approved`,
/// bound as parameters. `$9` holds the same operations as `tenant_id || ' ' ||
/// operation_id`: a filter on the rows the index found, so another tenant's operation
/// with one of the ids is never claimed. (An id has a fixed length and no space, so
/// each such text names exactly one pair.)
///
/// The approval is checked again here, in the statement that claims, however the row came
/// to read `approved`: its hash is the stored snapshot's, its window is open, and the
/// database's one quorum rule (`fleet_quorum_met`, migrations/0055_live_approvers.sql)
/// holds now: as many approvals of that hash as the quorum asks, by approvers that are
/// live approvers of the tenant at this moment (never its submitter), and as many of them
/// signed by their approvers' live keys as it asks. (The database refuses the move to
/// approved without them; this is the second lock on the same door, at the one place a
/// provider call begins: a row that reads `approved` with a removed approver's, another
/// tenant's or an unsigned approval is never claimed.)
///
/// An operation approved by a standing mandate instead (`decided_by` `mandate:…`, no
/// approvals) is claimed while that mandate stands (`fleet_mandate_holds`: a mandate
/// revoked since is never claimed on; migrations/0061_mandates.sql).
fn claim_sql() -> String {
    format!(
        "WITH claimed AS (
            UPDATE operations SET status = $7, fence = fence + 1, lease_owner = $2,
                lease_expires_at = now() + make_interval(secs => $3::float8 / 1000.0), attempts = attempts + 1,
                updated_at = now()
            WHERE operation_id = ANY($1::text[]) AND tenant_id || ' ' || operation_id = ANY($9::text[])
              AND status = $6
              AND ($4::bigint IS NULL OR fence = $4)
              AND (cardinality($5::text[]) = 0 OR policy_version = ANY($5::text[]))
              AND approval_status = $8 AND approval_expires_at > now()
              AND approved_hash = payload_hash AND escalated_at IS NULL
              AND (fleet_quorum_met(operation_id, tenant_id) OR fleet_mandate_holds(operation_id, tenant_id))
            RETURNING {OPERATION_COLUMNS}
        ), attempt AS (
            INSERT INTO attempts (operation_id, tenant_id, fence, worker, request_sent)
            SELECT operation_id, tenant_id, fence, $2, false FROM claimed
        ), event AS (
            INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor)
            SELECT operation_id, tenant_id, 'transition', $6, $7, fence, 'execute' FROM claimed
        )
        SELECT * FROM claimed"
    )
}

/// The claim of a statement that was given one operation.
fn the_one(claimed: Vec<ClaimedOperation>) -> Claim {
    claimed
        .into_iter()
        .next()
        .map_or(Claim::NotClaimable, |c| Claim::Claimed(Box::new(c)))
}

/// What a claim asks of every operation it takes, and what it writes on them.
#[derive(Debug, Clone, Copy)]
struct ClaimTerms<'a> {
    /// The fence read before (a claim after reading); `None` claims on status alone.
    read_fence: Option<i64>,
    /// The policy versions the row must be under; any, when empty.
    policies: &'a [String],
    owner: &'a str,
    lease_ttl_ms: i64,
}

/// The operations' keys as the statements bind them: the ids, which the primary key
/// answers, and `tenant_id || ' ' || operation_id`, which filters the rows it found.
fn bound_keys<'a>(ops: &[OpRef<'a>]) -> (Vec<&'a str>, Vec<String>) {
    let operation_ids = ops.iter().map(|o| o.operation_id).collect();
    let pairs = ops
        .iter()
        .map(|o| format!("{} {}", o.tenant_id, o.operation_id))
        .collect();
    (operation_ids, pairs)
}

/// The claim's statement on `client` (a pooled connection, or a transaction's).
async fn claim_in<C: GenericClient>(
    client: &C,
    ops: &[OpRef<'_>],
    terms: ClaimTerms<'_>,
) -> Result<Vec<ClaimedOperation>, StoreError> {
    let (operation_ids, pairs) = bound_keys(ops);
    let stmt = client.prepare_cached(&claim_sql()).await?;
    let ttl = terms.lease_ttl_ms as f64;
    let (from, to) = (Status::NotStarted.as_str(), Status::InProgress.as_str());
    let approved = ApprovalStatus::Approved.as_str();
    let params: [Param<'_>; 9] = [
        &operation_ids,
        &terms.owner,
        &ttl,
        &terms.read_fence,
        &terms.policies,
        &from,
        &to,
        &approved,
        &pairs,
    ];
    let rows = client.query(&stmt, &params).await?;
    rows.iter()
        .map(|r| {
            crate::transition::observe(Status::NotStarted, Status::InProgress, None, None);
            let row = OperationRow::from_row(r)?;
            Ok(ClaimedOperation {
                fence: row.fence,
                row,
            })
        })
        .collect()
}

/// Renews a held lease; `$4` is the status `in_progress`, bound as a parameter.
const RENEW: &str = "
UPDATE operations SET lease_expires_at = now() + make_interval(secs => $3::float8 / 1000.0)
WHERE operation_id = $1 AND tenant_id = $5 AND fence = $2 AND status = $4 AND lease_expires_at > now()";

impl<R: ClaimAndCall> StoreAs<R> {
    /// Claims an approved, unexpired `not_started` row whose fence is still `read_fence`.
    pub async fn claim(
        &self,
        op: OpRef<'_>,
        read_fence: i64,
        owner: &str,
        lease_ttl_ms: i64,
    ) -> Result<Claim, StoreError> {
        let terms = ClaimTerms {
            read_fence: Some(read_fence),
            policies: &[],
            owner,
            lease_ttl_ms,
        };
        Ok(the_one(self.claim_where(&[op], terms).await?))
    }

    /// Claims without reading first: an approved, unexpired `not_started` row under one of
    /// `policies` (any, when empty). The compare-and-set on status alone is enough, since
    /// the claim bumps the fence in the same statement; the happy path costs one statement.
    pub async fn claim_ready(
        &self,
        op: OpRef<'_>,
        policies: &[String],
        owner: &str,
        lease_ttl_ms: i64,
    ) -> Result<Claim, StoreError> {
        let claimed = self
            .claim_ready_many(&[op], policies, owner, lease_ttl_ms)
            .await?;
        Ok(the_one(claimed))
    }

    /// [`Store::claim_ready`] for several operations in one statement and one commit.
    /// Returns the rows claimed, in no particular order; an operation missing from them
    /// was not claimable (the caller reads its row and acts on what it says).
    pub async fn claim_ready_many(
        &self,
        ops: &[OpRef<'_>],
        policies: &[String],
        owner: &str,
        lease_ttl_ms: i64,
    ) -> Result<Vec<ClaimedOperation>, StoreError> {
        let mut ops = ops.to_vec();
        ops.sort_unstable();
        ops.dedup();
        let terms = ClaimTerms {
            read_fence: None,
            policies,
            owner,
            lease_ttl_ms,
        };
        self.claim_where(&ops, terms).await
    }

    /// Claims what is ready; then, for the operations that were not, lets a standing
    /// mandate approve those it covers and claims them, in one transaction
    /// (`fleet_mandate_approve`, migrations/0061_mandates.sql): the budget is taken in the
    /// transaction that claims. The happy path (an approved operation) stays one statement;
    /// an operation that is neither approved nor covered costs one transaction more.
    async fn claim_where(
        &self,
        ops: &[OpRef<'_>],
        terms: ClaimTerms<'_>,
    ) -> Result<Vec<ClaimedOperation>, StoreError> {
        let mut claimed = claim_in(&self.client().await?, ops, terms).await?;
        if claimed.len() == ops.len() {
            return Ok(claimed);
        }
        let rest: Vec<OpRef<'_>> = ops
            .iter()
            .copied()
            .filter(|o| {
                !claimed.iter().any(|c| {
                    c.row.operation_id.as_str() == o.operation_id && c.row.tenant_id == o.tenant_id
                })
            })
            .collect();
        claimed.extend(self.claim_by_mandate(&rest, terms).await?);
        Ok(claimed)
    }

    async fn claim_by_mandate(
        &self,
        ops: &[OpRef<'_>],
        terms: ClaimTerms<'_>,
    ) -> Result<Vec<ClaimedOperation>, StoreError> {
        let (operation_ids, pairs) = bound_keys(ops);
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let approve = tx
            .prepare_cached("SELECT fleet_mandate_approve($1::text[], $2::text[])")
            .await?;
        let approved: i32 = tx
            .query_one(&approve, &[&operation_ids, &pairs])
            .await?
            .get(0);
        if approved == 0 {
            return Ok(Vec::new());
        }
        let claimed = claim_in(&tx, ops, terms).await?;
        tx.commit().await?;
        Ok(claimed)
    }

    /// Extends a held lease. `false` means fenced out: the lease is gone.
    pub async fn renew_lease(
        &self,
        op: OpRef<'_>,
        fence: i64,
        lease_ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(RENEW).await?;
        let held = Status::InProgress.as_str();
        Ok(client
            .execute(
                &stmt,
                &[
                    &op.operation_id,
                    &fence,
                    &(lease_ttl_ms as f64),
                    &held,
                    &op.tenant_id,
                ],
            )
            .await?
            == 1)
    }
}
