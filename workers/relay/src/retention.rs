//! Retention of published events: every [`RETENTION_EVERY`], deletes rows published more
//! than `OUTBOX_RETENTION_S` ago in batches of [`RETENTION_BATCH`], at most
//! [`MAX_BATCHES_PER_RUN`] per run so one run never holds the database for long. Replicas
//! may run it at the same time: batches skip rows another one holds. Unpublished rows are
//! never deleted, whatever their age.

use std::time::Duration;

use fleet_runtime::prune_in_batches;
use fleet_store::RelayStore;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub const RETENTION_EVERY: Duration = Duration::from_secs(60);
pub const RETENTION_BATCH: i64 = 1_000;
pub const MAX_BATCHES_PER_RUN: u32 = 100;

/// Runs until `shutdown`; the first run starts right away.
pub async fn run(store: RelayStore, retention_s: u64, shutdown: CancellationToken) {
    loop {
        prune_once(&store, retention_s, &shutdown).await;
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(RETENTION_EVERY) => {}
        }
    }
}

/// One run; returns how many rows were deleted.
pub async fn prune_once(store: &RelayStore, retention_s: u64, shutdown: &CancellationToken) -> u64 {
    let (deleted, failed) =
        prune_in_batches(RETENTION_BATCH, MAX_BATCHES_PER_RUN, shutdown, || {
            store.prune_outbox(retention_s, RETENTION_BATCH)
        })
        .await;
    if let Some(e) = failed {
        warn!(error = %e, "outbox retention batch failed; the next run retries");
    }
    if deleted > 0 {
        info!(deleted, retention_s, "pruned published outcome events");
    }
    deleted
}
