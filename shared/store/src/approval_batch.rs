//! A batch approval recorded: one signed statement, one approval per listed operation,
//! through `fleet_record_batch` (migrations/0064_approval_batches.sql), which refuses the
//! whole batch unless it lists exactly what was signed.

use fleet_core::{KeyId, OpKey, Signature};
use serde_json::Value;

use crate::component::ApproveBatches;
use crate::StoreAs;
use crate::StoreError;

/// What recording a batch came to.
#[derive(Debug)]
pub enum BatchRecorded {
    /// Each listed operation, and whether this batch completed its quorum.
    Recorded(Vec<(OpKey, bool)>),
    /// The database refused the whole batch (its message says why); nothing was written.
    Refused(String),
}

impl<R: ApproveBatches> StoreAs<R> {
    /// Records the batch `statement` (hash `hash`) signed by `principal` with `key_id`,
    /// whose signature the caller verified; `via` is how the principal signed in.
    pub async fn record_batch(
        &self,
        statement: &Value,
        hash: &str,
        principal: &str,
        key_id: &KeyId,
        signature: &Signature,
        via: &str,
    ) -> Result<BatchRecorded, StoreError> {
        let client = self.client().await?;
        let sig = signature.to_bytes();
        match client
            .query(
                "SELECT operation_id, tenant_id, approved FROM fleet_record_batch($1, $2, $3, $4, $5, $6)",
                &[statement, &hash, &principal, &key_id.as_str(), &sig, &via],
            )
            .await
        {
            Ok(rows) => Ok(BatchRecorded::Recorded(
                rows.iter()
                    .map(|r| {
                        (
                            OpKey::new(r.get::<_, String>(1), r.get::<_, String>(0)),
                            r.get::<_, bool>(2),
                        )
                    })
                    .collect(),
            )),
            Err(e) => {
                let refused = e
                    .as_db_error()
                    .filter(|d| {
                        d.code().code() == "23514"
                            || d.code().code() == "23505"
                            || d.code().code() == "22007"
                    })
                    .map(|d| d.message().to_owned());
                match refused {
                    Some(why) => Ok(BatchRecorded::Refused(why)),
                    None => Err(e.into()),
                }
            }
        }
    }
}
