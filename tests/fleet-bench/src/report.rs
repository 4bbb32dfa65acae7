//! The report of a throughput run: one table on stdout, next to the fleet's targets, and
//! the same figures (with everything behind them) as JSON.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::database::PgCounters;
use super::latency::RowFigures;
use super::load::{BenchTally, PipelineLoad};
use super::machine::Machine;
use super::measure::Usage;
use super::table::Table;
use super::{BenchArgs, Mode};

pub const SCHEMA: &str = "fleet-bench.v1";
const TOP_STATEMENTS: usize = 15;

#[derive(Debug, Serialize)]
pub struct Config {
    pub mode: Mode,
    pub ops: usize,
    pub replicas: BTreeMap<String, u16>,
    pub rate: Option<f64>,
    pub duration_s: Option<u64>,
    pub publishers: u16,
    pub preload_final: i64,
    pub smoke: bool,
    pub bin_dir: String,
    pub database: String,
    pub namespace: String,
    pub worker_env: BTreeMap<String, String>,
}

impl Config {
    pub fn new(
        args: &BenchArgs,
        ops: usize,
        bin_dir: &Path,
        replicas: [(&str, u16); 5],
        worker_env: BTreeMap<String, String>,
    ) -> Config {
        Config {
            mode: args.mode,
            ops,
            replicas: replicas.iter().map(|(b, n)| (b.to_string(), *n)).collect(),
            rate: args.rate.filter(|_| args.mode == Mode::Pipeline),
            duration_s: args.duration_s,
            publishers: args.publishers,
            preload_final: args.preload_final,
            smoke: args.smoke,
            bin_dir: bin_dir.display().to_string(),
            database: args.db_name.clone(),
            namespace: args.namespace.clone(),
            worker_env,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PgFigures {
    /// `pg_stat_database` deltas over the window for the bench database.
    pub window: PgCounters,
    /// Transactions the bench itself ran in the window (polls, readings): subtracted.
    pub bench_xacts: u64,
    /// Fleet transactions per operation in the window (`xact_commit`: read-only ones and
    /// statement preparations included).
    pub xacts_per_op: f64,
    /// Write transactions (durable commits) per operation in the window.
    pub commits_per_op: f64,
    pub rollbacks_per_op: f64,
    pub rows_inserted_per_op: f64,
    pub rows_updated_per_op: f64,
    /// WAL written per operation in the window (cluster-wide), in kB, and the full-page
    /// images among its records.
    pub wal_kb_per_op: f64,
    pub wal_fpi_per_op: f64,
    /// WAL flushes per operation in the window.
    pub wal_syncs_per_op: f64,
    /// Execute mode: the setup (prepare insert + approve), with no worker running.
    pub setup: Option<PgCounters>,
    pub setup_xacts_per_op: Option<f64>,
    pub setup_commits_per_op: Option<f64>,
    /// Happy-path write transactions: setup + window (execute mode) or the window (pipeline).
    pub happy_path_commits_per_op: f64,
    pub statements_per_op: Option<f64>,
    pub statements_note: Option<String>,
    /// Calls per operation by statement (pg_stat_statements), most called first.
    pub top_statements: Vec<(f64, String)>,
}

impl PgFigures {
    pub fn new(
        ops: usize,
        window: PgCounters,
        setup: Option<PgCounters>,
        bench_xacts: u64,
        note: Option<String>,
        statements: Option<Vec<(i64, String)>>,
    ) -> PgFigures {
        let per = |n: i64| n as f64 / ops as f64;
        let commits_per_op = per(window.xids_assigned);
        let setup_commits_per_op = setup.map(|s| per(s.xids_assigned));
        // The bench's own statements are already left out (BENCH_SQL_TAG).
        let statements_per_op = statements
            .as_ref()
            .map(|s| per(s.iter().map(|(n, _)| n).sum::<i64>()));
        PgFigures {
            window,
            bench_xacts,
            xacts_per_op: per(window.xact_commit - bench_xacts as i64),
            commits_per_op,
            rollbacks_per_op: per(window.xact_rollback),
            rows_inserted_per_op: per(window.tup_inserted),
            rows_updated_per_op: per(window.tup_updated),
            wal_kb_per_op: per(window.wal_bytes) / 1024.0,
            wal_fpi_per_op: per(window.wal_fpi),
            wal_syncs_per_op: per(window.wal_syncs),
            setup,
            setup_xacts_per_op: setup.map(|s| per(s.xact_commit)),
            setup_commits_per_op,
            happy_path_commits_per_op: commits_per_op + setup_commits_per_op.unwrap_or(0.0),
            statements_per_op,
            statements_note: note,
            top_statements: statements
                .unwrap_or_default()
                .into_iter()
                .take(TOP_STATEMENTS)
                .map(|(n, q)| (per(n), q))
                .collect(),
        }
    }
}

pub struct Figures {
    pub ops: usize,
    pub started_at: DateTime<Utc>,
    pub window_start: DateTime<Utc>,
    pub rows: RowFigures,
    pub pg: PgFigures,
    pub usage: Usage,
    pub load: Option<PipelineLoad>,
    pub ring_s: Option<f64>,
    pub provider_payments: Option<i64>,
    pub provider_refused: Option<i64>,
    pub tally: Arc<BenchTally>,
}

/// A run against a rate-limited provider (`--provider-rate`).
#[derive(Debug, Serialize)]
pub struct ProviderRate {
    pub limit_per_s: u32,
    /// ops ÷ limit: the shortest the window can be.
    pub ideal_s: f64,
    pub window_over_ideal: f64,
    pub refused: Option<i64>,
    pub refused_per_op: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Broker {
    pub bench_published: u64,
    pub workers_published: f64,
    pub workers_publish_failed: f64,
    pub delivered: f64,
    pub published_per_op: f64,
    pub delivered_per_op: f64,
    /// Pipeline: approvals whose bell could not be rung.
    pub unrung: u64,
}

#[derive(Debug, Serialize)]
pub struct Results {
    pub ops: usize,
    pub window_start: DateTime<Utc>,
    /// From the first bell (execute) or the first submit (pipeline) to the last `resolved_at`.
    pub window_s: f64,
    pub throughput_ops_s: f64,
    pub ring_s: Option<f64>,
    pub pipeline: Option<PipelineLoad>,
    pub provider_payments: Option<i64>,
    pub provider_rate: Option<ProviderRate>,
    pub rows: RowFigures,
    pub postgres: PgFigures,
    pub broker: Broker,
    pub usage: Usage,
}

#[derive(Debug, Serialize)]
struct Report {
    schema: &'static str,
    kind: &'static str,
    started_at: DateTime<Utc>,
    command: String,
    machine: Machine,
    config: Config,
    results: Results,
    targets: Vec<super::table::Target>,
    notes: Vec<String>,
}

/// Prints the table, writes the JSON to `json`, and returns the figures a comparison needs.
pub fn finish(
    args: &BenchArgs,
    machine: Machine,
    config: Config,
    f: Figures,
    mut notes: Vec<String>,
    json: &Path,
) -> anyhow::Result<super::compare::Key> {
    let end = f.rows.last_final_at.unwrap_or(f.window_start);
    let window_s = (end - f.window_start).num_microseconds().unwrap_or(0) as f64 / 1e6;
    let ops = f.ops as f64;
    let tally = &f.tally;
    let bench_published = BenchTally::get(&tally.published);
    let w = &f.usage.worker_messages;
    let broker = Broker {
        bench_published,
        workers_published: w.published,
        workers_publish_failed: w.publish_failed,
        delivered: w.consumed,
        published_per_op: (bench_published as f64 + w.published) / ops,
        delivered_per_op: w.consumed / ops,
        unrung: BenchTally::get(&tally.unrung),
    };
    let results = Results {
        ops: f.ops,
        window_start: f.window_start,
        window_s,
        throughput_ops_s: ops / window_s.max(1e-9),
        ring_s: f.ring_s,
        pipeline: f.load,
        provider_payments: f.provider_payments,
        provider_rate: args.provider_rate.map(|limit| {
            let ideal_s = ops / f64::from(limit);
            ProviderRate {
                limit_per_s: limit,
                ideal_s,
                window_over_ideal: window_s / ideal_s,
                refused: f.provider_refused,
                refused_per_op: f.provider_refused.map(|n| n as f64 / ops),
            }
        }),
        rows: f.rows,
        postgres: f.pg,
        broker,
        usage: f.usage,
    };
    super::summary::add_notes(args, &results, &mut notes);
    let mut table = Table::default();
    let targets = super::summary::fill(&mut table, args, &results);
    let report = Report {
        schema: SCHEMA,
        kind: "throughput",
        started_at: f.started_at,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        config,
        results,
        targets,
        notes,
    };
    println!();
    println!(
        "fleet-bench --mode {}: {} operations, replicas {}",
        args.mode.as_str(),
        f.ops,
        replicas_line(&report.config)
    );
    println!("machine: {}", report.machine.line());
    println!("{}", report.machine.settings_line());
    if let Some(line) = report.machine.calibration_line() {
        println!("{line}");
    }
    if let Some(line) = report.machine.speed_line() {
        println!("{line}");
    }
    table.print();
    for n in &report.notes {
        println!("note: {n}");
    }
    super::table::write_json(json, &report)?;
    Ok(super::compare::Key::of(
        args,
        &report.results,
        &report.machine,
    ))
}

fn replicas_line(c: &Config) -> String {
    c.replicas
        .iter()
        .map(|(b, n)| format!("{} {n}", b.trim_start_matches("fleet-")))
        .collect::<Vec<_>>()
        .join(", ")
}
