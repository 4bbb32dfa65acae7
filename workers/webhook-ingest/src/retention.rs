//! The retention job: every `WEBHOOK_RETENTION_INTERVAL_S`, deletes dedup rows older than
//! `WEBHOOK_RETENTION_S` in batches of `WEBHOOK_RETENTION_BATCH`, at most
//! [`MAX_BATCHES_PER_RUN`] batches per run so one run never holds the database for long.
//! Replicas may run it at the same time: batches skip rows another one holds.

use std::time::Duration;

use fleet_runtime::prune_in_batches;
use fleet_store::{IngestStore, PruneCursor};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub const MAX_BATCHES_PER_RUN: u32 = 100;

#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub older_than_s: u64,
    pub batch: i64,
    pub interval: Duration,
}

/// Runs until `shutdown`; the first run starts right away.
pub async fn run(store: IngestStore, retention: Retention, shutdown: CancellationToken) {
    // Kept from run to run: each starts where the last one ended (`PruneCursor`).
    let cursor = PruneCursor::new();
    loop {
        prune_once(&store, retention, &cursor, &shutdown).await;
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(retention.interval) => {}
        }
    }
}

/// One run: batches until one comes back short, the cap is hit, or shutdown. Returns
/// how many rows were deleted.
pub async fn prune_once(
    store: &IngestStore,
    retention: Retention,
    cursor: &PruneCursor,
    shutdown: &CancellationToken,
) -> u64 {
    let (deleted, failed) =
        prune_in_batches(retention.batch, MAX_BATCHES_PER_RUN, shutdown, || {
            store.prune_webhook_events(retention.older_than_s, retention.batch, cursor)
        })
        .await;
    if let Some(e) = failed {
        warn!(error = %e, "webhook retention batch failed; the next run retries");
    }
    if deleted > 0 {
        info!(
            deleted,
            older_than_s = retention.older_than_s,
            "pruned old webhook dedup rows"
        );
    }
    deleted
}
