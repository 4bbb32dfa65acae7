//! The records one operation's evidence bundle is made of, read in one statement with the
//! owner's rights (`fleet_operation_evidence`, migrations/0069): the API's own grants
//! reach neither the policy's text nor the attempts' answers, and need not.

use fleet_core::OpRef;
use serde_json::Value;

use crate::component::ReadEvidence;
use crate::{StoreAs, StoreError};

impl<R: ReadEvidence> StoreAs<R> {
    /// Every record of `op` as stored (the operation, its policy, approvals with their
    /// keys, mandates, attempts, provider events, history), or `None` when its tenant
    /// holds no such operation.
    pub async fn evidence_records(&self, op: OpRef<'_>) -> Result<Option<Value>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT fleet_operation_evidence($1, $2)",
                &[&op.operation_id, &op.tenant_id],
            )
            .await?;
        Ok(row.get::<_, Option<Value>>(0))
    }
}
