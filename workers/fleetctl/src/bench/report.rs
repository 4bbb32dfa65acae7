//! The report of a throughput run: one table on stdout, next to issue 7's targets, and
//! the same figures (with everything behind them) as JSON.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::database::PgCounters;
use super::latency::{Percentiles, RowFigures};
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
    pub fn new(args: &BenchArgs, ops: usize, bin_dir: &Path, replicas: [(&str, u16); 4], worker_env: BTreeMap<String, String>) -> Config {
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
    /// Fleet transactions (commits) per operation in the window.
    pub commits_per_op: f64,
    pub rollbacks_per_op: f64,
    pub rows_inserted_per_op: f64,
    pub rows_updated_per_op: f64,
    /// Execute mode: the setup (prepare insert + approve), measured exactly.
    pub setup: Option<PgCounters>,
    pub setup_commits_per_op: Option<f64>,
    /// Happy-path total: setup + window (execute mode) or the window (pipeline mode).
    pub happy_path_commits_per_op: f64,
    pub statements_per_op: Option<f64>,
    pub statements_note: Option<String>,
    /// Calls per operation by statement (pg_stat_statements), most called first.
    pub top_statements: Vec<(f64, String)>,
}

impl PgFigures {
    pub fn new(ops: usize, window: PgCounters, setup: Option<PgCounters>, bench_xacts: u64, note: Option<String>, statements: Option<Vec<(i64, String)>>) -> PgFigures {
        let per = |n: i64| n as f64 / ops as f64;
        let commits_per_op = per(window.xact_commit - bench_xacts as i64);
        let setup_commits_per_op = setup.map(|s| per(s.xact_commit));
        // The bench's own statements (one per poll/reading) are taken out of the total.
        let statements_per_op = statements.as_ref().map(|s| per(s.iter().map(|(n, _)| n).sum::<i64>() - bench_xacts as i64));
        PgFigures {
            window,
            bench_xacts,
            commits_per_op,
            rollbacks_per_op: per(window.xact_rollback),
            rows_inserted_per_op: per(window.tup_inserted),
            rows_updated_per_op: per(window.tup_updated),
            setup,
            setup_commits_per_op,
            happy_path_commits_per_op: commits_per_op + setup_commits_per_op.unwrap_or(0.0),
            statements_per_op,
            statements_note: note,
            top_statements: statements.unwrap_or_default().into_iter().take(TOP_STATEMENTS).map(|(n, q)| (per(n), q)).collect(),
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
    pub tally: Arc<BenchTally>,
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

fn lat(p: &Percentiles) -> String {
    format!("p50 {:.1} / p95 {:.1} / p99 {:.1} ms (max {:.0}, n {})", p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms, p.count)
}

fn per_second(v: &[i64]) -> String {
    // The first and last seconds are partial; report the whole ones.
    let inner: Vec<i64> = if v.len() > 2 { v[1..v.len() - 1].to_vec() } else { v.to_vec() };
    let mut s = inner.clone();
    s.sort_unstable();
    match (s.first(), s.get(s.len() / 2), s.last()) {
        (Some(min), Some(mid), Some(max)) => format!("min {min} / median {mid} / max {max} over {} whole seconds", inner.len()),
        _ => "n/a".into(),
    }
}

pub fn finish(args: &BenchArgs, machine: Machine, config: Config, f: Figures, mut notes: Vec<String>) -> anyhow::Result<()> {
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
        rows: f.rows,
        postgres: f.pg,
        broker,
        usage: f.usage,
    };
    add_notes(args, &results, &mut notes);
    let mut table = Table::default();
    let targets = fill(&mut table, args, &results);
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
    println!("fleetctl bench --mode {}: {} operations, replicas {}", args.mode.as_str(), f.ops, replicas_line(&report.config));
    println!("machine: {}", report.machine.line());
    table.print();
    for n in &report.notes {
        println!("note: {n}");
    }
    super::table::write_json(&args.json_path(), &report)
}

fn replicas_line(c: &Config) -> String {
    c.replicas.iter().map(|(b, n)| format!("{} {n}", b.trim_start_matches("fleet-"))).collect::<Vec<_>>().join(", ")
}

fn add_notes(args: &BenchArgs, r: &Results, notes: &mut Vec<String>) {
    if args.mode == Mode::Execute {
        notes.push(
            "execute mode: operations were inserted (Store::insert_prepared, as fleet-prepare does) and approved \
             (Store::approve, as `fleetctl approve` does) before the workers started; the bench then rang every \
             execute bell at once on --publishers connections. approve→final therefore includes the setup; \
             ring→final and claim→final are the execute-phase latencies."
                .into(),
        );
    }
    notes.push(format!(
        "commits = pg_stat_database.xact_commit of the bench database (every transaction, read-only ones too, \
         including reconcile's periodic sweeps), minus the bench's own {} polls and readings.",
        r.postgres.bench_xacts
    ));
    notes.push(
        "postgres and rabbitmq CPU are every such process on the machine (other databases and vhosts included); \
         'other' is the machine's busy CPU not accounted to the fleet, the bench, Postgres or RabbitMQ."
            .into(),
    );
    let succeeded = r.rows.statuses.get("succeeded").copied().unwrap_or(0);
    if succeeded as usize != r.ops {
        notes.push(format!("only {succeeded} of {} operations succeeded: {:?}", r.ops, r.rows.statuses));
    }
    if let Some(p) = r.provider_payments {
        if p != succeeded {
            notes.push(format!("the provider holds {p} payments for {succeeded} succeeded operations: NOT exactly once"));
        }
    }
}

fn fill(t: &mut Table, args: &BenchArgs, r: &Results) -> Vec<super::table::Target> {
    let pg = &r.postgres;
    let u = &r.usage;
    let statuses: Vec<String> = r.rows.statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
    t.row("final states", statuses.join(", "));
    t.row("provider payments (simulator)", r.provider_payments.map_or("n/a".into(), |p| p.to_string()));
    t.row("window (first bell/submit → last final)", format!("{:.2} s", r.window_s));
    let (tp_target, tp_figure) = match args.mode {
        Mode::Execute => (1500.0, "throughput, execute phase"),
        Mode::Pipeline => (1000.0, "throughput, whole pipeline"),
    };
    t.target(tp_figure, format!("{:.0} ops/s", r.throughput_ops_s), format!("≥ {tp_target:.0} ops/s"), Some(r.throughput_ops_s >= tp_target));
    if let Some(s) = r.ring_s {
        t.row("bells rung by the bench in", format!("{s:.2} s ({:.0}/s)", r.ops as f64 / s.max(1e-9)));
    }
    if let Some(p) = &r.pipeline {
        t.row("submitted by the bench", format!("{:.2} s ({:.0}/s achieved, {} asked)", p.submit_s, p.submit_rate, args.rate.map_or("no limit".into(), |r| format!("{r:.0}/s"))));
        t.row("finals per second", per_second(&r.rows.finals_per_second));
    }
    let p99 = r.rows.approve_to_final.p99_ms;
    match args.mode {
        Mode::Pipeline => {
            t.target("latency approve→final", lat(&r.rows.approve_to_final), "p99 ≤ 50 ms at 500 ops/s", Some(p99 <= 50.0));
            t.row("latency prepared→approved (bench approver)", lat(&r.rows.prepared_to_approved));
        }
        Mode::Execute => {
            t.row("latency approve→final (incl. setup)", lat(&r.rows.approve_to_final));
            if let Some(rf) = &r.rows.ring_to_final {
                t.row("latency bell→final", lat(rf));
            }
        }
    }
    t.row("latency claim→final", lat(&r.rows.claim_to_final));
    if let Some(s) = pg.setup_commits_per_op {
        t.row("postgres commits/op, setup (insert+approve)", format!("{s:.2}"));
    }
    t.row(&format!("postgres commits/op, {} window", args.mode.as_str()), format!("{:.2} (rollbacks {:.3})", pg.commits_per_op, pg.rollbacks_per_op));
    t.target("postgres commits/op, happy path total", format!("{:.2}", pg.happy_path_commits_per_op), "≤ 4", Some(pg.happy_path_commits_per_op <= 4.0));
    t.row("postgres statements/op", pg.statements_per_op.map_or_else(|| pg.statements_note.clone().unwrap_or_default(), |s| format!("{s:.2}")));
    t.row("postgres rows inserted/updated per op", format!("{:.2} / {:.2}", pg.rows_inserted_per_op, pg.rows_updated_per_op));
    let b = &r.broker;
    t.row("broker messages/op published / delivered", format!("{:.2} / {:.2}", b.published_per_op, b.delivered_per_op));
    for p in &u.processes {
        let msgs = p.messages.map_or(String::new(), |m| format!(", {:.0} pub / {:.0} consumed", m.published, m.consumed));
        t.row(&format!("cpu {}", p.name), format!("{:.2} s = {:.3} ms/op, peak RSS {:.1} MiB{msgs}", p.cpu_s, p.cpu_ms_per_op, p.peak_rss_mib));
    }
    t.target("worker cpu/op (all workers)", format!("{:.3} ms (execute {:.3} ms)", u.workers_cpu_ms_per_op, u.execute_cpu_ms_per_op), "≤ 0.4 ms", Some(u.workers_cpu_ms_per_op <= 0.4));
    t.target("worker peak RSS (largest)", format!("{:.1} MiB", u.max_worker_peak_rss_mib), "≤ 64 MiB", Some(u.max_worker_peak_rss_mib <= 64.0));
    t.row(
        "cpu bench / postgres / rabbitmq / other",
        format!("{:.2} / {:.2} / {:.2} / {:.2} s", u.bench_cpu_s, u.postgres_cpu_s, u.rabbitmq_cpu_s, u.other_cpu_s),
    );
    t.row("machine busy", format!("{:.2} of {:.2} cpu-s ({:.0}%)", u.machine_busy_cpu_s, u.machine_capacity_cpu_s, 100.0 * u.machine_busy_cpu_s / u.machine_capacity_cpu_s.max(1e-9)));
    t.targets()
}
