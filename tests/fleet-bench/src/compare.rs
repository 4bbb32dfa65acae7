//! `--baseline-bin`: the same run with two sets of binaries, side by side. Each round runs
//! the baseline, then the candidate, on the same machine within minutes of each other;
//! the table gives the median of each figure over the rounds and the median of the
//! rounds' candidate/baseline ratios (pairing keeps a ratio meaningful while the
//! machine's load drifts between rounds).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::machine::Machine;
use super::report::Results;
use super::table::number;
use super::{BenchArgs, Mode};

/// The figures a comparison shows, from one run.
#[derive(Debug, Clone, Serialize)]
pub struct Key {
    pub ops: usize,
    pub succeeded: i64,
    pub throughput_ops_s: f64,
    pub claim_to_final_p50_ms: f64,
    pub claim_to_final_p99_ms: f64,
    /// Execute mode: the bench's bell → final; pipeline: approve → final.
    pub to_final_p50_ms: f64,
    pub to_final_p99_ms: f64,
    /// Pipeline: approve → final p99 of the operations approved after the workers' first
    /// seconds ([`super::latency::WARM_UP`]); NaN in execute mode.
    pub to_final_warm_p99_ms: f64,
    pub postgres_fleet_cpu_ms_per_op: f64,
    pub postgres_cpu_ms_per_op: f64,
    pub rabbitmq_cpu_ms_per_op: f64,
    pub execute_cpu_ms_per_op: f64,
    pub workers_cpu_ms_per_op: f64,
    pub bench_cpu_ms_per_op: f64,
    pub commits_per_op: f64,
    pub wal_kb_per_op: f64,
    pub wal_fpi_per_op: f64,
    pub checkpoints: i64,
    pub rows_inserted_per_op: f64,
    pub rows_updated_per_op: f64,
    pub max_worker_peak_rss_mib: f64,
    pub machine_busy_pct: f64,
    pub machine_steal_pct: f64,
    /// The calibration's commit probe (ms per commit) and CPU loop (ms), before the window.
    pub calibration_commit_ms: f64,
    pub calibration_cpu_loop_ms: f64,
    /// The in-window speed probe against the calibration's loop (1.0: as fast).
    pub window_core_slowdown: f64,
}

impl Key {
    pub fn of(args: &BenchArgs, r: &Results, machine: &Machine) -> Key {
        let u = &r.usage;
        let per_op = |s: f64| s * 1000.0 / r.ops.max(1) as f64;
        let to_final = match (args.mode, &r.rows.ring_to_final) {
            (Mode::Execute, Some(p)) => *p,
            _ => r.rows.approve_to_final,
        };
        Key {
            ops: r.ops,
            succeeded: r.rows.statuses.get("succeeded").copied().unwrap_or(0),
            throughput_ops_s: r.throughput_ops_s,
            claim_to_final_p50_ms: r.rows.claim_to_final.p50_ms,
            claim_to_final_p99_ms: r.rows.claim_to_final.p99_ms,
            to_final_p50_ms: to_final.p50_ms,
            to_final_p99_ms: to_final.p99_ms,
            to_final_warm_p99_ms: r.rows.approve_to_final_warm.map_or(f64::NAN, |p| p.p99_ms),
            postgres_fleet_cpu_ms_per_op: u.postgres_fleet_cpu_ms_per_op,
            postgres_cpu_ms_per_op: u.postgres_cpu_ms_per_op,
            rabbitmq_cpu_ms_per_op: u.rabbitmq_cpu_ms_per_op,
            execute_cpu_ms_per_op: u.execute_cpu_ms_per_op,
            workers_cpu_ms_per_op: u.workers_cpu_ms_per_op,
            bench_cpu_ms_per_op: per_op(u.bench_cpu_s),
            commits_per_op: r.postgres.commits_per_op,
            wal_kb_per_op: r.postgres.wal_kb_per_op,
            wal_fpi_per_op: r.postgres.wal_fpi_per_op,
            checkpoints: r.postgres.window.checkpoints,
            rows_inserted_per_op: r.postgres.rows_inserted_per_op,
            rows_updated_per_op: r.postgres.rows_updated_per_op,
            max_worker_peak_rss_mib: u.max_worker_peak_rss_mib,
            machine_busy_pct: 100.0 * u.machine_busy_cpu_s / u.machine_capacity_cpu_s.max(1e-9),
            machine_steal_pct: 100.0 * u.machine_steal_cpu_s / u.machine_capacity_cpu_s.max(1e-9),
            calibration_commit_ms: machine
                .calibration
                .as_ref()
                .map_or(f64::NAN, |c| c.commit_ms),
            calibration_cpu_loop_ms: machine
                .calibration
                .as_ref()
                .map_or(f64::NAN, |c| c.cpu_loop_ms),
            window_core_slowdown: machine
                .speed_during_window
                .as_ref()
                .map_or(f64::NAN, |s| s.slowdown()),
        }
    }
}

/// The figures compared, in table order: (label, unit, getter).
type Figure = (&'static str, &'static str, fn(&Key) -> f64);

fn figures(mode: Mode) -> Vec<Figure> {
    let to_final = match mode {
        Mode::Execute => ("latency bell→final p50", "latency bell→final p99"),
        Mode::Pipeline => ("latency approve→final p50", "latency approve→final p99"),
    };
    vec![
        ("throughput", "ops/s", |k| k.throughput_ops_s),
        ("latency claim→final p50", "ms", |k| {
            k.claim_to_final_p50_ms
        }),
        ("latency claim→final p99", "ms", |k| {
            k.claim_to_final_p99_ms
        }),
        (to_final.0, "ms", |k| k.to_final_p50_ms),
        (to_final.1, "ms", |k| k.to_final_p99_ms),
        ("postgres cpu/op (the fleet's backends)", "ms", |k| {
            k.postgres_fleet_cpu_ms_per_op
        }),
        ("postgres cpu/op (every postgres process)", "ms", |k| {
            k.postgres_cpu_ms_per_op
        }),
        ("rabbitmq cpu/op", "ms", |k| k.rabbitmq_cpu_ms_per_op),
        ("fleet-execute cpu/op", "ms", |k| k.execute_cpu_ms_per_op),
        ("all workers cpu/op", "ms", |k| k.workers_cpu_ms_per_op),
        ("bench cpu/op", "ms", |k| k.bench_cpu_ms_per_op),
        ("postgres commits/op (window)", "", |k| k.commits_per_op),
        ("rows inserted/op", "", |k| k.rows_inserted_per_op),
        ("rows updated/op", "", |k| k.rows_updated_per_op),
        ("worker peak RSS (largest)", "MiB", |k| {
            k.max_worker_peak_rss_mib
        }),
        ("machine busy", "%", |k| k.machine_busy_pct),
        ("machine stolen by the hypervisor", "%", |k| {
            k.machine_steal_pct
        }),
        ("calibration: Postgres commit", "ms", |k| {
            k.calibration_commit_ms
        }),
        ("calibration: CPU loop", "ms", |k| k.calibration_cpu_loop_ms),
        ("core slowdown during the window", "×", |k| {
            k.window_core_slowdown
        }),
    ]
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `path` with `-<suffix>` before its extension: `bench-execute.json` → `bench-execute-compare.json`.
pub fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("bench");
    let ext = path.extension().and_then(|s| s.to_str()).unwrap_or("json");
    path.with_file_name(format!("{stem}-{suffix}.{ext}"))
}

#[derive(Debug, Serialize)]
struct Row {
    figure: String,
    unit: String,
    baseline: f64,
    candidate: f64,
    /// Median over the rounds of candidate / baseline.
    ratio: f64,
}

#[derive(Debug, Serialize)]
struct Comparison {
    schema: &'static str,
    kind: &'static str,
    command: String,
    baseline_bin: String,
    candidate_bin: String,
    rounds: Vec<(Key, Key)>,
    medians: Vec<Row>,
}

/// A figure's label in a table: its name, and its unit in parentheses if it has one.
fn label(figure: &str, unit: &str) -> String {
    if unit.is_empty() {
        figure.to_owned()
    } else {
        format!("{figure} ({unit})")
    }
}

/// The width of a table's label column, for `(figure, unit)` pairs.
fn label_width<'a>(labels: impl Iterator<Item = (&'a str, &'a str)>) -> usize {
    labels
        .map(|(f, u)| label(f, u).chars().count())
        .max()
        .unwrap_or(6)
}

/// Prints the side-by-side table and writes it as JSON to `json`.
pub fn finish(
    args: &BenchArgs,
    baseline: &Path,
    candidate: &Path,
    pairs: &[(Key, Key)],
    json: &Path,
) -> anyhow::Result<()> {
    let rows: Vec<Row> = figures(args.mode)
        .into_iter()
        .map(|(figure, unit, get)| Row {
            figure: figure.into(),
            unit: unit.into(),
            baseline: median(pairs.iter().map(|(b, _)| get(b)).collect()),
            candidate: median(pairs.iter().map(|(_, c)| get(c)).collect()),
            ratio: median(
                pairs
                    .iter()
                    .map(|(b, c)| get(c) / get(b))
                    .filter(|r| r.is_finite())
                    .collect(),
            ),
        })
        .collect();
    println!();
    println!(
        "fleet-bench --mode {} --baseline-bin: {} round(s), medians",
        args.mode.as_str(),
        pairs.len()
    );
    println!("baseline:  {}", baseline.display());
    println!("candidate: {}", candidate.display());
    let w0 = label_width(rows.iter().map(|r| (r.figure.as_str(), r.unit.as_str())));
    println!(
        "{:<w0$}  {:>10}  {:>10}  {:>9}",
        "FIGURE", "BASELINE", "CANDIDATE", "CAND/BASE"
    );
    for r in &rows {
        let label = label(&r.figure, &r.unit);
        println!(
            "{label:<w0$}  {:>10}  {:>10}  {:>8}×",
            number(r.baseline),
            number(r.candidate),
            number(r.ratio)
        );
    }
    for (i, (b, c)) in pairs.iter().enumerate() {
        println!(
            "round {}: baseline {:.0} ops/s ({} of {} succeeded), candidate {:.0} ops/s ({} of {} succeeded)",
            i + 1,
            b.throughput_ops_s,
            b.succeeded,
            b.ops,
            c.throughput_ops_s,
            c.succeeded,
            c.ops
        );
    }
    let report = Comparison {
        schema: super::report::SCHEMA,
        kind: "comparison",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        baseline_bin: baseline.display().to_string(),
        candidate_bin: candidate.display().to_string(),
        rounds: pairs.to_vec(),
        medians: rows,
    };
    super::table::write_json(json, &report)
}

#[derive(Debug, Serialize)]
struct Spread {
    figure: String,
    unit: String,
    median: f64,
    min: f64,
    max: f64,
}

#[derive(Debug, Serialize)]
struct Repeated {
    schema: &'static str,
    kind: &'static str,
    command: String,
    bin: String,
    runs: Vec<Key>,
    spreads: Vec<Spread>,
}

/// `--rounds N` without `--baseline-bin`: the same run N times; prints each figure's
/// median and range (the spread to expect from one run on this machine) and writes them
/// as JSON to `json`.
pub fn finish_repeated(
    args: &BenchArgs,
    bin: &Path,
    runs: &[Key],
    json: &Path,
) -> anyhow::Result<()> {
    let spreads: Vec<Spread> = figures(args.mode)
        .into_iter()
        .map(|(figure, unit, get)| {
            let v: Vec<f64> = runs.iter().map(get).filter(|v| v.is_finite()).collect();
            Spread {
                figure: figure.into(),
                unit: unit.into(),
                median: median(v.clone()),
                min: v.iter().copied().fold(f64::NAN, f64::min),
                max: v.iter().copied().fold(f64::NAN, f64::max),
            }
        })
        .collect();
    println!();
    println!(
        "fleet-bench --mode {} --rounds {}: medians and ranges over the runs",
        args.mode.as_str(),
        runs.len()
    );
    println!("binaries: {}", bin.display());
    let w0 = label_width(spreads.iter().map(|r| (r.figure.as_str(), r.unit.as_str())));
    println!(
        "{:<w0$}  {:>10}  {:>10}  {:>10}",
        "FIGURE", "MEDIAN", "MIN", "MAX"
    );
    for r in &spreads {
        let label = label(&r.figure, &r.unit);
        println!(
            "{label:<w0$}  {:>10}  {:>10}  {:>10}",
            number(r.median),
            number(r.min),
            number(r.max)
        );
    }
    for (i, k) in runs.iter().enumerate() {
        println!(
            "run {}: {:.0} ops/s ({} of {} succeeded), Postgres {:.3} ms/op, core slowdown {:.2}×",
            i + 1,
            k.throughput_ops_s,
            k.succeeded,
            k.ops,
            k.postgres_fleet_cpu_ms_per_op,
            k.window_core_slowdown
        );
    }
    let report = Repeated {
        schema: super::report::SCHEMA,
        kind: "repeated",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        bin: bin.display().to_string(),
        runs: runs.to_vec(),
        spreads,
    };
    super::table::write_json(json, &report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn a_suffix_goes_before_the_extension() {
        assert_eq!(
            suffixed(Path::new("target/bench/bench-execute.json"), "compare"),
            PathBuf::from("target/bench/bench-execute-compare.json")
        );
        assert_eq!(
            suffixed(Path::new("out"), "baseline-1"),
            PathBuf::from("out-baseline-1.json")
        );
    }
}
