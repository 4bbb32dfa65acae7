//! `fleet-bench`: throughput, latency and cost of the fleet on this machine, with real
//! processes (the simulator and N replicas of each worker) against the configured
//! Postgres and RabbitMQ, in a database and broker namespace of its own.
//!
//! - `--mode execute`: M operations are prepared and approved first (with the workers
//!   not yet running), then every execute bell is rung at once and the execute phase is
//!   measured until every operation is final.
//! - `--mode pipeline`: submit → prepare → approve → execute, measured end to end,
//!   optionally paced (`--rate`, `--duration-s`).
//! - `--provider-rate N` (execute mode): the simulator admits N requests a second to each
//!   provider API (429 with `Retry-After: 1` above it) and the workers are told the same
//!   (`PAYMENTS_RATE_PER_S`); the report gives the window against ops ÷ N and the refused
//!   requests per operation.
//! - `--history N`: the same run on an empty database, with N operations of history, and
//!   after a prune of that history, side by side.
//! - `--scale`: no workers; sweep and claim latency with 1 M final rows and 10 k unknown
//!   rows in the table, against the same work on a table without that history.
//!
//! A benchmark, not a test: it reports figures next to the fleet's targets and fails only
//! when the run itself fails (a process does not start, operations never become final).

mod calibrate;
mod compare;
mod database;
mod fleet;
mod history;
mod latency;
mod load;
mod machine;
mod measure;
mod procfs;
mod report;
mod scale;
mod scrape;
mod seed;
mod settle;
mod sql;
mod summary;
mod table;
mod throughput;

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use fleetctl::args::Connection;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Operations are prepared and approved first; the execute phase is measured.
    Execute,
    /// submit → prepare → approve → execute, measured end to end.
    Pipeline,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Execute => "execute",
            Mode::Pipeline => "pipeline",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// What is measured.
    #[arg(long, value_enum, default_value_t = Mode::Execute)]
    pub mode: Mode,
    /// Operations to run [default: 5000; 200 with --smoke]. In pipeline mode with
    /// --duration-s, rate × duration instead.
    #[arg(long)]
    pub ops: Option<usize>,
    /// Replicas of each worker.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub replicas: u16,
    /// Replicas of fleet-execute [default: --replicas].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub execute_replicas: Option<u16>,
    /// Pipeline mode: intents submitted per second [default: as fast as the publishers go].
    #[arg(long)]
    pub rate: Option<f64>,
    /// Pipeline mode: a sustained run of this many seconds at --rate (ops = rate × duration).
    #[arg(long)]
    pub duration_s: Option<u64>,
    /// Execute mode against a rate-limited provider: the simulator admits this many
    /// requests a second to each provider API (429 with Retry-After: 1 above it), and
    /// every worker is set to the same (PAYMENTS_RATE_PER_S: execute's and reconcile's
    /// calls, and prepare's payee lookups after them). Reports the window
    /// against ops ÷ rate and the refused requests per operation [ops default: 600].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub provider_rate: Option<u32>,
    /// A tiny run for CI (under ~30 s): 200 operations; with --scale, 20 k history rows.
    #[arg(long)]
    pub smoke: bool,
    /// Cost as history grows: the same run three times, on an empty database, with this
    /// many succeeded payments of history in the bench's own tenant (every tenth to one
    /// payee the run pays too; their approvals, attempts, history rows, published events
    /// and webhook rows; nothing analysed), and after `fleetctl prune` at the default
    /// retentions; prints the three side by side with their ratio to the empty run.
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..=100_000_000))]
    pub history: Option<i64>,
    /// The scale run: sweep and claim latency with 1 M final and 10 k unknown rows.
    #[arg(long)]
    pub scale: bool,
    /// Where the JSON report goes [default: target/bench/bench-<mode|scale>[-smoke].json].
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Where the worker and simulator binaries are [default: next to fleetctl].
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Another set of binaries to compare with, e.g. a git revision built into another
    /// directory (`git worktree add /tmp/base main && cargo build --release --bins
    /// --target-dir /tmp/base-target` there; then `/tmp/base-target/release`). The same run
    /// is made with them (on the schema their own `fleetctl migrate` creates) and with
    /// --bin-dir, in turn, and the figures are printed side by side.
    #[arg(long)]
    pub baseline_bin: Option<PathBuf>,
    /// With --baseline-bin: baseline/candidate pairs to run (medians are compared).
    /// Without: the same run this many times, each figure's median and range printed
    /// (the spread one run gives on this machine). With --history: the empty, history and
    /// pruned runs this many times, interleaved; medians and the median of the ratios.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=20))]
    pub rounds: u16,
    /// Where each process writes its log.
    #[arg(long, default_value = "target/bench/logs")]
    pub log_dir: PathBuf,
    /// The bench's own database on the --database-url server; dropped and recreated.
    #[arg(long, default_value = "fleet_bench")]
    pub db_name: String,
    /// The bench's own broker namespace (not --amqp-namespace); its queues are deleted
    /// before and after.
    #[arg(long, default_value = "fleet-bench")]
    pub namespace: String,
    /// First port tried for the simulator and the workers' ADMIN_ADDR (the next free
    /// ones are taken in turn).
    #[arg(long, default_value_t = 19201)]
    pub port_base: u16,
    /// Broker connections the bench publishes on (intents, bells), each with one
    /// publish in flight; also the number of concurrent approvers in pipeline mode. With
    /// 8, ringing 3,000 bells took as long as executing them on a 2-core machine: the
    /// figure was the bench's own.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub publishers: u16,
    /// Final operations inserted (with their attempts and events) before the run, so the
    /// run sees a table with history.
    #[arg(long, default_value_t = 0)]
    pub preload_final: i64,
    /// --scale: final operations of history [default: 1,000,000; 20,000 with --smoke].
    #[arg(long)]
    pub scale_final_rows: Option<i64>,
    /// --scale: unknown rows the sweep works on [default: 10,000; 1,000 with --smoke].
    #[arg(long)]
    pub scale_unknown_rows: Option<i64>,
    /// RUST_LOG of the workers and the simulator.
    #[arg(long, default_value = "warn")]
    pub worker_log: String,
    /// Give up when the operations are not all final after this long.
    #[arg(long, default_value_t = 600)]
    pub timeout_s: u64,
    /// Keep the bench database after the run (it is dropped at the start of the next).
    #[arg(long)]
    pub keep_db: bool,
}

impl BenchArgs {
    pub fn execute_replicas(&self) -> u16 {
        self.execute_replicas.unwrap_or(self.replicas)
    }

    pub fn json_path(&self) -> PathBuf {
        if let Some(p) = &self.json {
            return p.clone();
        }
        let what = if self.scale {
            "scale".to_owned()
        } else if self.history.is_some() {
            format!("{}-history", self.mode.as_str())
        } else {
            self.mode.as_str().to_owned()
        };
        let smoke = if self.smoke { "-smoke" } else { "" };
        PathBuf::from(format!("target/bench/bench-{what}{smoke}.json"))
    }
}

pub async fn run(conn: &Connection, args: BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        !args.db_name.is_empty()
            && args
                .db_name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
        "--db-name must be lowercase letters, digits and _"
    );
    anyhow::ensure!(
        !args.namespace.is_empty(),
        "--namespace must not be empty (the empty namespace is production)"
    );
    if args.scale {
        anyhow::ensure!(
            args.baseline_bin.is_none(),
            "--baseline-bin compares throughput runs; --scale runs no workers"
        );
        scale::run(conn, &args).await
    } else {
        throughput::run(conn, &args).await
    }
}
