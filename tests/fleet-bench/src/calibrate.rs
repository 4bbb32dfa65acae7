//! A short calibration probe, run before every measurement: a fixed loop of Postgres
//! commits and a fixed CPU loop. Their times say how fast this machine's disk flushes and
//! its cores compute right now, so figures taken on two machines (or at two moments on a
//! shared one) can be compared: a run whose commit probe is twice as slow is not a fleet
//! twice as slow.

use std::hint::black_box;
use std::time::Instant;

use serde::Serialize;

use super::sql::BenchSql;

/// Commits in the Postgres probe: each a one-row insert in its own transaction, as
/// durable as the server is configured (the bench never changes that).
pub const PROBE_COMMITS: u32 = 300;
/// Rounds of the CPU probe (a xorshift generator: integer work with no memory traffic).
pub const PROBE_CPU_ROUNDS: u64 = 50_000_000;

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub commits: u32,
    /// Mean wall time of one commit (round trip, WAL flush).
    pub commit_ms: f64,
    pub cpu_rounds: u64,
    /// Wall time of the CPU loop on one core.
    pub cpu_loop_ms: f64,
}

impl Calibration {
    pub fn line(&self) -> String {
        format!(
            "calibration: {:.3} ms per Postgres commit ({} commits), {:.0} ms CPU loop ({} M rounds)",
            self.commit_ms,
            self.commits,
            self.cpu_loop_ms,
            self.cpu_rounds / 1_000_000
        )
    }
}

/// Runs both probes against the bench database (a table of its own, dropped after).
pub async fn probe(sql: &BenchSql) -> anyhow::Result<Calibration> {
    let client = sql.client().await?;
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS bench_calibration (n int NOT NULL)")
        .await?;
    let insert = client
        .prepare("INSERT INTO bench_calibration (n) VALUES ($1)")
        .await?;
    let started = Instant::now();
    for n in 0..PROBE_COMMITS as i32 {
        client.execute(&insert, &[&n]).await?;
    }
    let commit_ms = started.elapsed().as_secs_f64() * 1e3 / f64::from(PROBE_COMMITS);
    client.batch_execute("DROP TABLE bench_calibration").await?;
    let cpu_loop_ms = tokio::task::spawn_blocking(cpu_loop_ms).await?;
    Ok(Calibration {
        commits: PROBE_COMMITS,
        commit_ms,
        cpu_rounds: PROBE_CPU_ROUNDS,
        cpu_loop_ms,
    })
}

fn cpu_loop_ms() -> f64 {
    let started = Instant::now();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..PROBE_CPU_ROUNDS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    black_box(x);
    started.elapsed().as_secs_f64() * 1e3
}
