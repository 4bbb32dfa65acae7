//! `fleet-bench --history N`: does an operation cost more once the fleet has lived?
//!
//! The same run (pipeline or execute mode) three times, each on a database of its own:
//!
//! 1. empty;
//! 2. with N succeeded payments of history in the bench's own tenant
//!    ([`seed::lived_history`]: every tenth to a payee the run pays too, each with its
//!    approval, attempt, history rows, published events for the last days and webhook
//!    rows), seeded set-based, with nothing analysed or vacuumed afterwards, since the fleet
//!    does neither and the image's Postgres runs no autovacuum: every plan must hold on
//!    an unanalysed table;
//! 3. with the same history after one `fleetctl prune` at the default retentions
//!    (timed: rows per second), so its effect on the cost per operation shows.
//!
//! The table gives each run's figures and their ratio to the empty run; the target is
//! that the history changes none of them by more than 1.2×. With `--rounds R` the three
//! runs are made R times, interleaved (empty, history, pruned, then again), so a machine
//! that drifts over the half hour weighs on every column alike. The table then gives each
//! figure's median over the rounds, and each ratio is the median of the rounds' own
//! ratios: one window's tail latency on a saturated machine varies by 1.5× from run to run
//! of the same database, more than the history is asked to change it.

use std::time::Instant;

use serde::Serialize;

use super::compare::{median, Key};
use super::latency::after_warm_up;
use super::sql::BenchSql;
use super::table::number;
use super::throughput::{self, BinSet};
use super::{seed, BenchArgs};
use fleetctl::args::Connection;
use fleetctl::prune::{self, PruneReport, Retention};

/// The cost with history may differ from the cost without by at most this factor.
const TARGET_RATIO: f64 = 1.2;
/// The retentions `fleetctl prune` applies by default (the relay's and the webhook
/// receiver's defaults).
const RETENTION: Retention = Retention {
    outbox_s: 86_400,
    webhook_s: 2_592_000,
    batch: 1_000,
};

/// What is in the database before the workers start.
#[derive(Debug, Clone, Copy)]
pub enum Prelude {
    Empty,
    Lived { ops: i64, pruned: bool },
}

/// What the prelude did, and the rows it left.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PreludeFigures {
    pub seed_s: f64,
    pub pruned: Option<PruneReport>,
    pub outbox_rows: i64,
    pub webhook_rows: i64,
    pub history_rows: i64,
    /// The checkpoint and sync before the window ([`super::settle`]).
    pub settled: super::settle::Settled,
}

impl Prelude {
    pub fn label(self) -> &'static str {
        match self {
            Prelude::Empty => "empty",
            Prelude::Lived { pruned: false, .. } => "history",
            Prelude::Lived { pruned: true, .. } => "history, pruned",
        }
    }

    /// Seeds (and prunes) the bench database; `store_url` is the owner's connection.
    pub async fn apply(self, sql: &BenchSql, store_url: &str) -> anyhow::Result<PreludeFigures> {
        let Prelude::Lived { ops, pruned } = self else {
            return Ok(PreludeFigures::default());
        };
        let t = Instant::now();
        seed::lived_history(sql, super::load::TENANT, ops).await?;
        let seed_s = t.elapsed().as_secs_f64();
        println!("seeded {ops} operations of history in {seed_s:.1} s (nothing analysed)");
        let pruned = if pruned {
            let store = fleet_store::Store::connect_as(store_url, 2, super::database::BENCH_APP)?;
            let report = prune::prune(&store, RETENTION).await?;
            println!(
                "pruned {} outbox rows ({:.0} rows/s) and {} webhook rows ({:.0} rows/s)",
                report.outbox.rows,
                report.outbox.rows_per_s(),
                report.webhook_events.rows,
                report.webhook_events.rows_per_s()
            );
            Some(report)
        } else {
            None
        };
        let client = sql.client().await?;
        let count = |table: &str| format!("SELECT /* fleet-bench */ count(*) FROM {table}");
        let outbox_rows = client
            .query_one(&count("operation_outbox"), &[])
            .await?
            .get(0);
        let webhook_rows = client
            .query_one(&count("webhook_events"), &[])
            .await?
            .get(0);
        let history_rows = client
            .query_one(&count("operation_events"), &[])
            .await?
            .get(0);
        Ok(PreludeFigures {
            seed_s,
            pruned,
            outbox_rows,
            webhook_rows,
            history_rows,
            settled: Default::default(),
        })
    }
}

#[derive(Debug, Serialize)]
struct Run {
    round: u16,
    label: &'static str,
    prelude: PreludeFigures,
    key: Key,
}

#[derive(Debug, Serialize)]
struct HistoryReport {
    schema: &'static str,
    kind: &'static str,
    command: String,
    history_ops: i64,
    rounds: u16,
    runs: Vec<Run>,
    targets: Vec<super::table::Target>,
}

/// The figures compared, in table order: (label, unit, getter, target kind).
type Figure = (&'static str, &'static str, fn(&Key) -> f64, Bound);

#[derive(Clone, Copy, PartialEq)]
enum Bound {
    /// Not held to a ratio.
    None,
    /// Larger is worse: at most TARGET_RATIO × the empty run's.
    Cost,
    /// Larger is better: at least the empty run's ÷ TARGET_RATIO.
    Rate,
}

fn figures() -> Vec<Figure> {
    vec![
        ("throughput", "ops/s", |k| k.throughput_ops_s, Bound::Rate),
        (
            "postgres cpu/op (the fleet's backends)",
            "ms",
            |k| k.postgres_fleet_cpu_ms_per_op,
            Bound::Cost,
        ),
        (
            "postgres cpu/op (every postgres process)",
            "ms",
            |k| k.postgres_cpu_ms_per_op,
            Bound::None,
        ),
        (
            "latency to final p50",
            "ms",
            |k| k.to_final_p50_ms,
            Bound::None,
        ),
        (
            "latency to final p99",
            "ms",
            |k| k.to_final_p99_ms,
            Bound::Cost,
        ),
        (
            concat!("latency to final p99, ", after_warm_up!()),
            "ms",
            |k| k.to_final_warm_p99_ms,
            Bound::None,
        ),
        (
            "latency claim→final p99",
            "ms",
            |k| k.claim_to_final_p99_ms,
            Bound::None,
        ),
        (
            "rabbitmq cpu/op",
            "ms",
            |k| k.rabbitmq_cpu_ms_per_op,
            Bound::None,
        ),
        (
            "all workers cpu/op",
            "ms",
            |k| k.workers_cpu_ms_per_op,
            Bound::None,
        ),
        ("postgres commits/op", "", |k| k.commits_per_op, Bound::None),
        ("postgres WAL/op", "kB", |k| k.wal_kb_per_op, Bound::None),
        (
            "postgres full-page images/op",
            "",
            |k| k.wal_fpi_per_op,
            Bound::None,
        ),
        (
            "checkpoints begun in the window",
            "",
            |k| k.checkpoints as f64,
            Bound::None,
        ),
        ("machine busy", "%", |k| k.machine_busy_pct, Bound::None),
        (
            "calibration: Postgres commit",
            "ms",
            |k| k.calibration_commit_ms,
            Bound::None,
        ),
        (
            "core slowdown during the window",
            "×",
            |k| k.window_core_slowdown,
            Bound::None,
        ),
    ]
}

/// Whether `ratio` (with history ÷ empty) keeps to the bound.
fn within(bound: Bound, ratio: f64) -> Option<bool> {
    match bound {
        Bound::None => None,
        Bound::Cost => Some(ratio <= TARGET_RATIO),
        Bound::Rate => Some(ratio >= 1.0 / TARGET_RATIO),
    }
}

pub async fn run(
    conn: &Connection,
    args: &BenchArgs,
    set: &BinSet,
    ops: i64,
) -> anyhow::Result<()> {
    let preludes = [
        Prelude::Empty,
        Prelude::Lived { ops, pruned: false },
        Prelude::Lived { ops, pruned: true },
    ];
    let rounds = args.rounds;
    let mut runs = Vec::new();
    for round in 1..=rounds {
        for (i, prelude) in preludes.into_iter().enumerate() {
            println!(
                "\n== round {round} of {rounds}, run {} of 3: {} ==",
                i + 1,
                prelude.label()
            );
            let suffix = if rounds == 1 {
                format!("run-{}", i + 1)
            } else {
                format!("round-{round}-run-{}", i + 1)
            };
            let one = BinSet {
                bin_dir: set.bin_dir.clone(),
                migrator: None,
                label: set.label.clone(),
                json: super::compare::suffixed(&set.json, &suffix),
            };
            let (key, figures) = throughput::run_set(conn, args, &one, prelude).await?;
            runs.push(Run {
                round,
                label: prelude.label(),
                prelude: figures,
                key,
            });
        }
    }
    // runs[3r + i] is round r's run of preludes[i].
    let column =
        |i: usize| -> Vec<&Key> { runs.iter().skip(i).step_by(3).map(|r| &r.key).collect() };
    let (e, h, p) = (column(0), column(1), column(2));
    let mut targets = Vec::new();
    println!();
    println!(
        "fleet-bench --mode {} --history {ops}: the same run empty, with {ops} operations of history, and after a prune{}",
        args.mode.as_str(),
        if rounds == 1 {
            String::new()
        } else {
            format!("; {rounds} rounds: medians, and the median of the rounds' ratios")
        }
    );
    let w0 = figures()
        .iter()
        .map(|(f, u, _, _)| f.chars().count() + u.chars().count() + 3)
        .max()
        .unwrap_or(6);
    println!(
        "{:<w0$}  {:>9}  {:>9}  {:>7}  {:>9}  {:>7}  TARGET (history ÷ empty)",
        "FIGURE", "EMPTY", "HISTORY", "RATIO", "PRUNED", "RATIO"
    );
    for (figure, unit, get, bound) in figures() {
        let label = if unit.is_empty() {
            figure.to_owned()
        } else {
            format!("{figure} ({unit})")
        };
        let of = |keys: &[&Key]| median(keys.iter().map(|k| get(k)).collect());
        let ratio = |keys: &[&Key]| {
            median(
                keys.iter()
                    .zip(&e)
                    .map(|(k, base)| get(k) / get(base))
                    .collect(),
            )
        };
        let (rh, rp) = (ratio(&h), ratio(&p));
        let (met_h, met_p) = (within(bound, rh), within(bound, rp));
        let target = match bound {
            Bound::None => String::new(),
            Bound::Cost => format!("≤ {TARGET_RATIO}×"),
            Bound::Rate => format!("≥ 1/{TARGET_RATIO}×"),
        };
        let verdict = match (met_h, met_p) {
            (Some(a), Some(b)) => format!("{target}: {}", if a && b { "met" } else { "missed" }),
            _ => String::new(),
        };
        println!(
            "{label:<w0$}  {:>9}  {:>9}  {:>6}×  {:>9}  {:>6}×  {verdict}",
            number(of(&e)),
            number(of(&h)),
            number(rh),
            number(of(&p)),
            number(rp),
        );
        if let (Some(a), Some(b)) = (met_h, met_p) {
            targets.push(super::table::Target {
                figure: label,
                value: format!(
                    "{} → {} ({:.2}×), after the prune {} ({:.2}×)",
                    number(of(&e)),
                    number(of(&h)),
                    rh,
                    number(of(&p)),
                    rp
                ),
                target: target.clone(),
                met: Some(a && b),
            });
        }
    }
    if rounds > 1 {
        for r in &runs {
            let k = &r.key;
            println!(
                "round {} {}: {:.0} ops/s, approve → final p99 {:.0} ms, Postgres {:.2} ms/op (the fleet's backends), machine {:.0}% busy",
                r.round,
                r.label,
                k.throughput_ops_s,
                k.to_final_p99_ms,
                k.postgres_fleet_cpu_ms_per_op,
                k.machine_busy_pct
            );
        }
    }
    let name = |r: &Run| {
        if rounds == 1 {
            r.label.to_owned()
        } else {
            format!("round {} {}", r.round, r.label)
        }
    };
    for r in &runs {
        let s = &r.prelude.settled;
        println!(
            "{}: before the window, {:.0} MiB of dirty page cache; checkpoint {:.1} s, sync {:.1} s",
            name(r),
            s.dirty_mib_before,
            s.checkpoint_s,
            s.sync_s
        );
    }
    for r in runs.iter().filter(|r| r.prelude.history_rows > 0) {
        let f = &r.prelude;
        println!(
            "{}: seeded in {:.1} s; {} history rows, {} outbox rows, {} webhook rows at the start",
            name(r),
            f.seed_s,
            f.history_rows,
            f.outbox_rows,
            f.webhook_rows
        );
        if let Some(p) = &f.pruned {
            println!(
                "  prune: outbox {} rows in {:.1} s ({:.0} rows/s), webhook dedup {} rows in {:.1} s ({:.0} rows/s)",
                p.outbox.rows,
                p.outbox.seconds,
                p.outbox.rows_per_s(),
                p.webhook_events.rows,
                p.webhook_events.seconds,
                p.webhook_events.rows_per_s()
            );
        }
    }
    let report = HistoryReport {
        schema: super::report::SCHEMA,
        kind: "history",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        history_ops: ops,
        rounds,
        runs,
        targets,
    };
    super::table::write_json(&super::compare::suffixed(&set.json, "runs"), &report)
}
