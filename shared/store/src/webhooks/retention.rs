//! Retention of the dedup table: events older than the configured age are deleted in
//! bounded batches. A provider may redeliver for days (docs/design.md#provider-webhooks),
//! so the store refuses any age below [`MIN_WEBHOOK_RETENTION_S`], whatever a caller
//! asks.

use crate::component::IngestWebhooks;
use crate::prune_cursor::prune_batch;
use crate::PruneCursor;
use crate::StoreAs;
use crate::StoreError;

/// The shortest retention the protocol allows: a redelivery within it is still a duplicate.
pub const MIN_WEBHOOK_RETENTION_S: u64 = 7 * 86_400;

/// From the cursor on (`prune_cursor.rs`), so a batch does not walk the index entries of
/// the rows deleted before it.
const PRUNE: &str = "
WITH doomed AS (
    SELECT provider, event_id FROM webhook_events
    WHERE received_at < now() - make_interval(secs => $1)
      AND received_at >= COALESCE($3::timestamptz, '-infinity')
    ORDER BY received_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM webhook_events w USING doomed d
    WHERE w.provider = d.provider AND w.event_id = d.event_id
    RETURNING w.received_at
)
SELECT count(*) AS deleted, max(received_at) AS newest FROM gone";

impl<R: IngestWebhooks> StoreAs<R> {
    /// Deletes at most `batch` events received more than `older_than_s` seconds ago (by
    /// the database clock), oldest first from `cursor` on, skipping rows another pruner
    /// holds, and moves `cursor` to the newest it deleted. Returns how many it deleted;
    /// the caller repeats while a full batch came back, with the same cursor.
    pub async fn prune_webhook_events(
        &self,
        older_than_s: u64,
        batch: i64,
        cursor: &PruneCursor,
    ) -> Result<u64, StoreError> {
        if older_than_s < MIN_WEBHOOK_RETENTION_S {
            return Err(StoreError::Config(format!(
                "webhook retention of {older_than_s} s is below the minimum of {MIN_WEBHOOK_RETENTION_S} s (7 days)"
            )));
        }
        if batch < 1 {
            return Err(StoreError::Config(
                "webhook retention batch must be at least 1".into(),
            ));
        }
        let client = self.client().await?;
        prune_batch(&client, PRUNE, older_than_s, batch, cursor).await
    }
}
