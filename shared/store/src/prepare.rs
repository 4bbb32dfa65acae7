//! prepare's one write: the immutable snapshot, idempotent by operation_id.

use fleet_core::ValidIntent;

use crate::{Store, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrepareOutcome {
    Inserted,
    /// The same snapshot was prepared before (a redelivery): nothing to do.
    AlreadyPrepared,
    /// The id is taken by a different snapshot: the agent reused an id. Refused.
    Conflict { stored_hash: String },
}

const INSERT: &str = "
WITH inserted AS (
    INSERT INTO operations (operation_id, tenant_id, action, provider, target, supersedes, rationale,
                            payload, payload_hash, policy_version, data_version, idempotency_key,
                            approval_expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now() + make_interval(secs => $13))
    ON CONFLICT (operation_id) DO NOTHING
    RETURNING operation_id
), event AS (
    INSERT INTO operation_events (operation_id, kind, to_status, fence, actor, evidence)
    SELECT operation_id, 'prepared', 'not_started', 0, 'prepare', jsonb_build_object('payload_hash', $9::text)
    FROM inserted
)
SELECT count(*) AS inserted FROM inserted";

impl Store {
    /// Inserts the prepared operation (approval pending, expiring after the intent's TTL)
    /// with its `prepared` event, in one statement and one commit.
    pub async fn insert_prepared(&self, intent: &ValidIntent) -> Result<PrepareOutcome, StoreError> {
        let s = &intent.snapshot;
        let client = self.client().await?;
        let row = client
            .query_one(
                INSERT,
                &[
                    &s.operation_id,
                    &s.tenant_id,
                    &s.action,
                    &s.provider,
                    &s.target,
                    &intent.supersedes.as_ref().map(|o| o.as_str()),
                    &intent.rationale,
                    &s.payload,
                    &intent.payload_hash.as_str(),
                    &s.policy_version,
                    &s.data_version,
                    &intent.operation_id.idempotency_key().as_str(),
                    &(intent.approval_ttl_seconds as f64),
                ],
            )
            .await?;
        if row.get::<_, i64>("inserted") == 1 {
            return Ok(PrepareOutcome::Inserted);
        }
        let stored = client.query_one("SELECT payload_hash FROM operations WHERE operation_id = $1", &[&s.operation_id]).await?;
        let stored_hash: String = stored.get(0);
        if stored_hash == intent.payload_hash.as_str() {
            Ok(PrepareOutcome::AlreadyPrepared)
        } else {
            Ok(PrepareOutcome::Conflict { stored_hash })
        }
    }
}
