//! Retention of published events: every [`RETENTION_EVERY`], deletes rows published more
//! than `OUTBOX_RETENTION_S` ago in batches of [`RETENTION_BATCH`], at most
//! [`MAX_BATCHES_PER_RUN`] per run so one run never holds the database for long. Replicas
//! may run it at the same time: batches skip rows another one holds. Unpublished rows are
//! never deleted, whatever their age.

use std::time::Duration;

use fleet_runtime::prune_in_batches;
use fleet_store::{PruneCursor, RelayStore};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub const RETENTION_EVERY: Duration = Duration::from_secs(60);
pub const RETENTION_BATCH: i64 = 1_000;
pub const MAX_BATCHES_PER_RUN: u32 = 100;

/// Every this many runs (an hour at [`RETENTION_EVERY`]) a run starts again from the
/// oldest published event rather than from the cursor. An event's `published_at` is the
/// start of the transaction that marked it, so a relay round that began before the
/// cursor's age and committed after the cursor passed it (possible when the retention is
/// shorter than such a round: `OUTBOX_RETENTION_S=0`) left an event behind the cursor.
/// Such a run walks the entries deleted since the last vacuum once, not every minute.
pub const CURSOR_KEPT_FOR_RUNS: u64 = 60;

/// Runs until `shutdown`; the first run starts right away.
pub async fn run(store: RelayStore, retention_s: u64, shutdown: CancellationToken) {
    // Kept from run to run: each starts where the last one ended (`PruneCursor`).
    let mut cursor = PruneCursor::new();
    for runs in 0u64.. {
        if runs % CURSOR_KEPT_FOR_RUNS == 0 {
            cursor = PruneCursor::new();
        }
        let deleted = prune_once(&store, retention_s, &cursor, &shutdown).await;
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(pause_after(deleted)) => {}
        }
    }
}

/// The wait before the next run. A run that hit its cap left rows behind: a fleet
/// publishing more than the cap a minute (100,000 events: about 400 operations a second
/// at four events each) would otherwise keep more and more of them, so the next run
/// starts at once; the pauses between batches still leave the table to the relay.
pub fn pause_after(deleted: u64) -> Duration {
    if deleted >= RETENTION_BATCH.unsigned_abs() * u64::from(MAX_BATCHES_PER_RUN) {
        Duration::ZERO
    } else {
        RETENTION_EVERY
    }
}

/// One run; returns how many rows were deleted.
pub async fn prune_once(
    store: &RelayStore,
    retention_s: u64,
    cursor: &PruneCursor,
    shutdown: &CancellationToken,
) -> u64 {
    let (deleted, failed) =
        prune_in_batches(RETENTION_BATCH, MAX_BATCHES_PER_RUN, shutdown, || {
            store.prune_outbox(retention_s, RETENTION_BATCH, cursor)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_hit_its_cap_is_followed_at_once() {
        assert_eq!(pause_after(0), RETENTION_EVERY);
        assert_eq!(pause_after(99_999), RETENTION_EVERY);
        assert_eq!(pause_after(100_000), Duration::ZERO);
    }
}
