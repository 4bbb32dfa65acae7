//! Before a window is measured, the writes that came before it are written out.
//!
//! Seeding a million operations writes gigabytes in two minutes: Postgres's dirty buffers,
//! a checkpoint spread over the minutes after it, and the kernel's dirty page cache, which
//! it writes back in the background. A window started at once would pay for that writing
//! (in the kernel's CPU, in the disk's queue, in full-page images after the checkpoint)
//! and charge it to the history. So every run, the empty one too, first asks for a
//! checkpoint and then for the kernel to write back its dirty pages, and records how much
//! was waiting: each window then starts from the same place, a clean checkpoint and a
//! clean page cache.

use std::time::Instant;

use serde::Serialize;

use super::procfs::meminfo_kib;
use super::sql::BenchSql;

/// What was waiting to be written before a window, and how long writing it took.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Settled {
    /// The kernel's dirty and under-writeback page cache before the checkpoint, in MiB.
    pub dirty_mib_before: f64,
    /// The same once both were done.
    pub dirty_mib_after: f64,
    pub checkpoint_s: f64,
    pub sync_s: f64,
}

fn dirty_mib() -> f64 {
    let kib = meminfo_kib("Dirty").unwrap_or(0) + meminfo_kib("Writeback").unwrap_or(0);
    kib as f64 / 1024.0
}

/// A checkpoint (Postgres's dirty buffers to the files), then `sync` (the files to disk).
/// `CHECKPOINT` needs a superuser or `pg_checkpoint`: without it the run goes on, unsettled,
/// and says so.
pub async fn settle(sql: &BenchSql) -> anyhow::Result<Settled> {
    let dirty_mib_before = dirty_mib();
    let t = Instant::now();
    if let Err(e) = sql.client().await?.batch_execute("CHECKPOINT").await {
        println!("not settled: CHECKPOINT refused ({e}); the window may pay for earlier writes");
    }
    let checkpoint_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    tokio::task::spawn_blocking(|| std::process::Command::new("sync").status()).await??;
    let sync_s = t.elapsed().as_secs_f64();
    Ok(Settled {
        dirty_mib_before,
        dirty_mib_after: dirty_mib(),
        checkpoint_s,
        sync_s,
    })
}
