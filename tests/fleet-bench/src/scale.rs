//! `fleet-bench --scale`: does the cost of a sweep or a claim grow with history?
//!
//! No workers run. The bench database gets 10 k unknown rows (the sweeper's work) and a
//! set of approved rows to claim; the reconcile sweep's store queries
//! (`expire_leases`, `take_due_unknown`, `accepted_past_deadline`,
//! `take_stranded_approved`, `cancel_expired_approvals`, and the `fleet_gauges` reconcile
//! computes every tick) are timed over repeated runs, and `Store::claim` over fresh
//! rows. Then 1 M final operations (each with its attempt and four events) are inserted
//! and the same is timed again. The report gives p50/p95 of both and their ratio.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleet_core::OpRef;
use fleet_store::{Claim, Store};
use serde::Serialize;
use tokio::time::Instant;

use super::database::BenchDb;
use super::machine::Machine;
use super::table::{self, Table, Target};
use super::{seed, BenchArgs};
use fleetctl::args::Connection;

/// The reconcile worker's default SWEEP_BATCH.
const SWEEP_BATCH: i64 = 100;
const WARMUP: usize = 10;
const LEASE_TTL_MS: i64 = 3_600_000;
/// `take_stranded_approved` waits for rows older than this: none, as in a healthy fleet.
const STRANDED_AFTER: Duration = Duration::from_secs(3600);
const TARGET_RATIO: f64 = 1.5;
const SWEEP_QUERIES: [&str; 6] = [
    "expire_leases",
    "take_due_unknown",
    "accepted_past_deadline",
    "take_stranded_approved",
    "cancel_expired_approvals",
    "fleet_gauges",
];
const STEP: &str = "sweep step (all six)";
const CLAIM: &str = "claim (Store::claim)";

#[derive(Debug, Clone, Copy, Serialize)]
struct Sizes {
    final_rows: i64,
    unknown_rows: i64,
    sweep_reps: usize,
    claims: usize,
    sweep_batch: i64,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Stat {
    n: usize,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

fn stat(mut v: Vec<f64>) -> Stat {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        v.get(((q * v.len() as f64).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0)
    };
    Stat {
        n: v.len(),
        p50_ms: at(0.5),
        p95_ms: at(0.95),
        p99_ms: at(0.99),
        max_ms: v.last().copied().unwrap_or(0.0),
    }
}

#[derive(Debug, Serialize)]
struct Comparison {
    empty: Stat,
    with_history: Stat,
    p50_ratio: f64,
    p95_ratio: f64,
}

#[derive(Debug, Serialize)]
struct ScaleReport {
    schema: &'static str,
    kind: &'static str,
    started_at: DateTime<Utc>,
    command: String,
    machine: Machine,
    sizes: Sizes,
    seed_history_s: f64,
    figures: BTreeMap<String, Comparison>,
    targets: Vec<Target>,
    notes: Vec<String>,
}

async fn timed<T, E: Into<anyhow::Error>>(
    f: impl Future<Output = Result<T, E>>,
) -> anyhow::Result<(T, f64)> {
    let t = Instant::now();
    let out = f.await.map_err(Into::into)?;
    Ok((out, t.elapsed().as_secs_f64() * 1000.0))
}

/// Milliseconds by figure: each sweep query, the whole step, and the claim.
async fn measure(
    store: &Store,
    ready: &[String],
    reps: usize,
) -> anyhow::Result<BTreeMap<&'static str, Vec<f64>>> {
    let mut ms: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for rep in 0..WARMUP + reps {
        let mut step = [0.0; 6];
        step[0] = timed(store.expire_leases(SWEEP_BATCH)).await?.1;
        step[1] = timed(store.take_due_unknown(SWEEP_BATCH, Duration::ZERO))
            .await?
            .1;
        step[2] = timed(store.accepted_past_deadline(SWEEP_BATCH)).await?.1;
        step[3] = timed(store.take_stranded_approved(SWEEP_BATCH, STRANDED_AFTER))
            .await?
            .1;
        step[4] = timed(store.cancel_expired_approvals(SWEEP_BATCH)).await?.1;
        step[5] = timed(store.fleet_gauges()).await?.1;
        if rep >= WARMUP {
            for (q, v) in SWEEP_QUERIES.iter().zip(step) {
                ms.entry(q).or_default().push(v);
            }
            ms.entry(STEP).or_default().push(step.iter().sum());
        }
    }
    for (i, op) in ready.iter().enumerate() {
        let (claim, t) = timed(store.claim(
            OpRef::new(seed::READY_TENANT, op),
            0,
            "bench-scale",
            LEASE_TTL_MS,
        ))
        .await?;
        anyhow::ensure!(
            matches!(claim, Claim::Claimed(_)),
            "{op} could not be claimed"
        );
        if i >= WARMUP {
            ms.entry(CLAIM).or_default().push(t);
        }
    }
    Ok(ms)
}

fn sizes(args: &BenchArgs) -> Sizes {
    let smoke = args.smoke;
    Sizes {
        final_rows: args
            .scale_final_rows
            .unwrap_or(if smoke { 20_000 } else { 1_000_000 }),
        unknown_rows: args
            .scale_unknown_rows
            .unwrap_or(if smoke { 1_000 } else { 10_000 }),
        sweep_reps: if smoke { 30 } else { 300 },
        claims: if smoke { 100 } else { 1_000 },
        sweep_batch: SWEEP_BATCH,
    }
}

pub async fn run(conn: &Connection, args: &BenchArgs) -> anyhow::Result<()> {
    let started_at = Utc::now();
    let s = sizes(args);
    let db = BenchDb::recreate(conn.db.database_url.expose(), &args.db_name, None).await?;
    let machine = Machine::measure(&db).await?;
    let store = Store::connect(&db.url, 2)?;
    let sql = db.sql(1)?;
    println!(
        "fleet-bench --scale: {} unknown rows, then {} final operations of history; database {}",
        s.unknown_rows, s.final_rows, args.db_name
    );

    seed::unknown(&sql, s.unknown_rows).await?;
    let ready = seed::ready(&sql, 2, (s.claims + WARMUP) as i64).await?;
    seed::vacuum_analyze(&sql).await?;
    let empty = measure(&store, &ready, s.sweep_reps).await?;

    let t = Instant::now();
    seed::history(&sql, s.final_rows).await?;
    let ready = seed::ready(&sql, 3, (s.claims + WARMUP) as i64).await?;
    seed::vacuum_analyze(&sql).await?;
    let seed_history_s = t.elapsed().as_secs_f64();
    println!(
        "inserted {} final operations with their attempts and events in {seed_history_s:.1} s",
        s.final_rows
    );
    let full = measure(&store, &ready, s.sweep_reps).await?;
    drop(store);
    drop(sql);
    if !args.keep_db {
        db.drop().await?;
    }

    let mut figures = BTreeMap::new();
    let mut t = Table::default();
    t.row(
        "history rows",
        format!(
            "{} final operations (+1 attempt, 4 events each)",
            s.final_rows
        ),
    );
    t.row(
        "sweep work",
        format!(
            "{} unknown rows, batch {}, {} reps; {} claims",
            s.unknown_rows, s.sweep_batch, s.sweep_reps, s.claims
        ),
    );
    for name in [STEP, CLAIM].into_iter().chain(SWEEP_QUERIES) {
        let (e, f) = (
            stat(empty.get(name).cloned().unwrap_or_default()),
            stat(full.get(name).cloned().unwrap_or_default()),
        );
        let c = Comparison {
            empty: e,
            with_history: f,
            p50_ratio: f.p50_ms / e.p50_ms.max(1e-9),
            p95_ratio: f.p95_ms / e.p95_ms.max(1e-9),
        };
        let value = format!(
            "p50 {:.2} → {:.2} ms ({:.2}×), p95 {:.2} → {:.2} ms ({:.2}×)",
            e.p50_ms, f.p50_ms, c.p50_ratio, e.p95_ms, f.p95_ms, c.p95_ratio
        );
        if name == STEP || name == CLAIM {
            t.target(
                name,
                value,
                format!("p50 ≤ {TARGET_RATIO}× empty"),
                Some(c.p50_ratio <= TARGET_RATIO),
            );
        } else {
            t.row(&format!("  {name}"), value);
        }
        figures.insert(name.to_owned(), c);
    }
    let notes = vec![
        "empty = the same unknown and claimable rows without the history; timings are client-side round trips \
         over one local connection, after a warm-up, with VACUUM ANALYZE after each load."
            .into(),
        "only the sweep's store queries are timed, not the provider lookups a real sweep makes for due rows.".into(),
    ];
    println!();
    println!(
        "fleet-bench --scale: sweep and claim latency, empty table → {} rows of history",
        s.final_rows
    );
    println!("machine: {}", machine.line());
    println!("{}", machine.settings_line());
    if let Some(line) = machine.calibration_line() {
        println!("{line}");
    }
    t.print();
    for n in &notes {
        println!("note: {n}");
    }
    let report = ScaleReport {
        schema: super::report::SCHEMA,
        kind: "scale",
        started_at,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        sizes: s,
        seed_history_s,
        figures,
        targets: t.targets(),
        notes,
    };
    table::write_json(&args.json_path(), &report)
}
