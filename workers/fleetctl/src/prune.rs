//! `fleetctl prune`: every retention of the fleet, run once to the end, now.
//!
//! The relay and the webhook receiver prune their own tables in the background, a bounded
//! number of batches a minute (or an hour) so that no run holds the database for long.
//! This is the operator's lever beside them: after a shorter retention was set, after a
//! relay was down for a day, or on a schedule of one's own. It deletes only what no audit
//! reads (docs/operations.md, "Retention"):
//!
//! - outbox rows **published** longer ago than the outbox retention (an unpublished row is
//!   never deleted, whatever its age);
//! - webhook dedup rows received longer ago than the webhook retention (at least seven
//!   days, the store refuses less: providers redeliver for days).
//!
//! Operations, their history, attempts and approvals are never deleted: the database
//! refuses it (the history and approvals are append-only), and they are the audit.

use std::time::{Duration, Instant};

use fleet_store::{PruneCursor, Store, StoreError, MIN_WEBHOOK_RETENTION_S};
use serde::Serialize;

/// The pause between two batches: the table is left to the fleet's own work meanwhile.
const PAUSE_BETWEEN_BATCHES: Duration = Duration::from_millis(10);

/// How old a row must be to go, per table, and how many go per statement.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub outbox_s: u64,
    pub webhook_s: u64,
    pub batch: i64,
}

/// What one table gave up.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Pruned {
    pub rows: u64,
    pub batches: u64,
    pub seconds: f64,
}

impl Pruned {
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PruneReport {
    pub outbox: Pruned,
    pub webhook_events: Pruned,
}

/// Deletes batch after batch until one comes back short.
async fn until_short<F, Fut>(batch: i64, mut prune_batch: F) -> Result<Pruned, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, StoreError>>,
{
    let started = Instant::now();
    let mut pruned = Pruned::default();
    loop {
        let n = prune_batch().await?;
        pruned.rows += n;
        pruned.batches += 1;
        if n < batch.unsigned_abs() {
            break;
        }
        tokio::time::sleep(PAUSE_BETWEEN_BATCHES).await;
    }
    pruned.seconds = started.elapsed().as_secs_f64();
    Ok(pruned)
}

/// Runs every retention once to the end, table by table.
pub async fn prune(store: &Store, r: Retention) -> anyhow::Result<PruneReport> {
    anyhow::ensure!(
        r.webhook_s >= MIN_WEBHOOK_RETENTION_S,
        "the webhook retention must be at least {MIN_WEBHOOK_RETENTION_S} s (7 days): providers redeliver for days"
    );
    anyhow::ensure!(r.batch >= 1, "the batch must be at least 1 row");
    let (outbox_from, webhooks_from) = (PruneCursor::new(), PruneCursor::new());
    let outbox = until_short(r.batch, || {
        store.prune_outbox(r.outbox_s, r.batch, &outbox_from)
    })
    .await?;
    let webhook_events = until_short(r.batch, || {
        store.prune_webhook_events(r.webhook_s, r.batch, &webhooks_from)
    })
    .await?;
    Ok(PruneReport {
        outbox,
        webhook_events,
    })
}

/// `fleetctl prune`: prunes and says what went, per table.
/// With `-o json`: `{"outbox": …, "webhook_events": …}`, each `{"older_than_s", "rows",
/// "batches", "seconds"}`.
pub async fn run(store: &Store, r: Retention, format: crate::args::Format) -> anyhow::Result<()> {
    let report = prune(store, r).await?;
    if format == crate::args::Format::Json {
        let table = |older_than_s: u64, p: &Pruned| serde_json::json!({"older_than_s": older_than_s, "rows": p.rows, "batches": p.batches, "seconds": p.seconds});
        crate::output::json(&serde_json::json!({
            "outbox": table(r.outbox_s, &report.outbox),
            "webhook_events": table(r.webhook_s, &report.webhook_events),
        }));
        return Ok(());
    }
    for (table, older_than_s, p) in [
        ("operation_outbox (published)", r.outbox_s, report.outbox),
        ("webhook_events", r.webhook_s, report.webhook_events),
    ] {
        println!(
            "{table}: {} rows older than {older_than_s} s deleted in {} batches, {:.1} s ({:.0} rows/s)",
            p.rows,
            p.batches,
            p.seconds,
            p.rows_per_s()
        );
    }
    println!("operations, their history, attempts and approvals are kept");
    Ok(())
}
