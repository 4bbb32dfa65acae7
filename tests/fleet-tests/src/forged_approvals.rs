//! Approvals written past the API, as a compromised API (its database role) or a bypassed
//! database (the owner with the triggers off) would write them, and what such a row must
//! come to: execute never claims it.

use fleet_broker::Queue;
use fleet_core::Status;
use fleet_store::Claim;

use crate::{at, TestFleet};

impl TestFleet {
    /// A session of the API's database role (`fleet_api`), with exactly its grants: what a
    /// compromised API could do.
    pub async fn sql_as_api_role(&self) -> tokio_postgres::Client {
        let sql = self.sql().await;
        sql.batch_execute("SET ROLE fleet_api").await.unwrap();
        sql
    }

    /// Execute (already running) is rung for `op` and claims nothing, and a claim made here
    /// claims nothing either: the row is unstarted, its fence untouched, nothing was sent.
    pub async fn never_claimed(&self, op: &str) {
        self.ring_execute(op).await;
        self.drained(Queue::OperationsExecute).await;
        let claim = self
            .store
            .claim_ready(at(op), &[], "test-claimer", 30_000)
            .await
            .unwrap();
        assert!(matches!(claim, Claim::NotClaimable), "{claim:?}");
        let row = self.row(op).await;
        assert_eq!((row.status, row.fence), (Status::NotStarted, 0));
        assert_eq!(self.sim_posts(op).await, 0, "nothing was sent");
    }
}

/// Calls `op` approved by `by` with one `UPDATE` through `client`, as no decision of a
/// person does: the database's answer.
pub async fn mark_approved(
    client: &tokio_postgres::Client,
    op: &str,
    by: &str,
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "UPDATE operations SET approval_status = 'approved', approved_hash = payload_hash,
                 decided_by = $2, decided_at = now() WHERE operation_id = $1",
            &[&op, &by],
        )
        .await
}
