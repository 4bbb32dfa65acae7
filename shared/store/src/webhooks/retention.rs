//! Retention of the dedup table: events older than the configured age are deleted in
//! bounded batches. A provider may redeliver for days (docs/design.md#provider-webhooks),
//! so the store refuses any age below [`MIN_WEBHOOK_RETENTION_DAYS`], whatever a caller
//! asks.

use crate::{Store, StoreError};

/// The shortest retention the protocol allows: a redelivery within it is still a duplicate.
pub const MIN_WEBHOOK_RETENTION_DAYS: u32 = 7;

const PRUNE: &str = "
WITH doomed AS (
    SELECT provider, event_id FROM webhook_events
    WHERE received_at < now() - make_interval(days => $1)
    ORDER BY received_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
DELETE FROM webhook_events w USING doomed d
WHERE w.provider = d.provider AND w.event_id = d.event_id";

impl Store {
    /// Deletes at most `batch` events received more than `older_than_days` days ago (by
    /// the database clock), oldest first, skipping rows another pruner holds. Returns how
    /// many it deleted; the caller repeats while a full batch came back.
    pub async fn prune_webhook_events(&self, older_than_days: u32, batch: i64) -> Result<u64, StoreError> {
        if older_than_days < MIN_WEBHOOK_RETENTION_DAYS {
            return Err(StoreError::Config(format!(
                "webhook retention of {older_than_days} days is below the minimum of {MIN_WEBHOOK_RETENTION_DAYS}"
            )));
        }
        if batch < 1 {
            return Err(StoreError::Config("webhook retention batch must be at least 1".into()));
        }
        let days = i32::try_from(older_than_days).map_err(|_| StoreError::Config("webhook retention is out of range".into()))?;
        let client = self.client().await?;
        let stmt = client.prepare_cached(PRUNE).await?;
        Ok(client.execute(&stmt, &[&days, &batch]).await?)
    }
}
