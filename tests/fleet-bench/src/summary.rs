//! The lines of a throughput run's table (each figure next to the fleet's target) and
//! the notes under it: how a figure was measured, and when the bench itself may have
//! been the limit.

use super::latency::{after_warm_up, Percentiles};
use super::report::Results;
use super::table::{Table, Target};
use super::{BenchArgs, Mode};

/// Pipeline runs at this rate or below are low load: claim → final has a target there.
const LOW_LOAD_RATE: f64 = 50.0;

fn lat(p: &Percentiles) -> String {
    format!(
        "p50 {:.1} / p95 {:.1} / p99 {:.1} ms (max {:.0}, n {})",
        p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms, p.count
    )
}

fn per_second(v: &[i64]) -> String {
    // The first and last seconds are partial; report the whole ones.
    let inner: Vec<i64> = if v.len() > 2 {
        v[1..v.len() - 1].to_vec()
    } else {
        v.to_vec()
    };
    let mut s = inner.clone();
    s.sort_unstable();
    match (s.first(), s.get(s.len() / 2), s.last()) {
        (Some(min), Some(mid), Some(max)) => format!(
            "min {min} / median {mid} / max {max} over {} whole seconds",
            inner.len()
        ),
        _ => "n/a".into(),
    }
}

pub fn add_notes(args: &BenchArgs, r: &Results, notes: &mut Vec<String>) {
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
        "commits = write transactions = transaction ids assigned during the window (cluster-wide). \
         transactions = pg_stat_database.xact_commit of the bench database: every transaction, read-only ones, \
         reconcile's periodic sweeps and each unprepared statement's Parse round trip included, minus the bench's \
         own {} polls and readings.",
        r.postgres.bench_xacts
    ));
    let other = r.postgres.window.other_db_xacts + r.postgres.setup.map_or(0, |s| s.other_db_xacts);
    if other > 0 {
        notes.push(format!(
            "other databases ran {other} transactions during the measured phases: the cluster-wide commit count \
             may include some of theirs; rerun on a quiet machine for an exact figure."
        ));
    }
    if let Some(n) = &r.postgres.statements_note {
        notes.push(format!("statements/op: {n}"));
    }
    notes.push(
        "postgres and rabbitmq CPU are every such process on the machine (other databases and vhosts included); \
         'postgres cpu/op (the fleet's backends)' counts only the backends connected to the bench database (not \
         the bench's own) and the server's background processes; 'other' is the machine's busy CPU not accounted \
         to the fleet, the bench, Postgres or RabbitMQ."
            .into(),
    );
    // The bench must not be what limits the figures; say so when it may have been.
    if let Some(ring_s) = r.ring_s {
        let ring_rate = r.ops as f64 / ring_s.max(1e-9);
        if ring_rate < 1.5 * r.throughput_ops_s {
            notes.push(format!("the bench rang bells at {ring_rate:.0}/s, close to the throughput: ringing may bound it; try more --publishers"));
        }
    }
    if let (Some(p), Some(rate)) = (&r.pipeline, args.rate) {
        if p.submit_rate < 0.95 * rate {
            notes.push(format!("the bench submitted {:.0}/s of the {rate:.0}/s asked: submitting bounds this run; try more --publishers", p.submit_rate));
        }
    }
    if r.pipeline.is_some() && r.rows.prepared_to_approved.p95_ms > 100.0 {
        notes.push(format!(
            "the bench's approver lagged (prepared→approved p95 {:.0} ms): approving may bound the throughput; try more --publishers",
            r.rows.prepared_to_approved.p95_ms
        ));
    }
    let succeeded = r.rows.statuses.get("succeeded").copied().unwrap_or(0);
    if succeeded as usize != r.ops {
        notes.push(format!(
            "only {succeeded} of {} operations succeeded: {:?}",
            r.ops, r.rows.statuses
        ));
    }
    if let Some(p) = r.provider_payments {
        if p != succeeded {
            notes.push(format!("the provider holds {p} payments for {succeeded} succeeded operations: NOT exactly once"));
        }
    }
}

pub fn fill(t: &mut Table, args: &BenchArgs, r: &Results) -> Vec<Target> {
    let pg = &r.postgres;
    let u = &r.usage;
    let statuses: Vec<String> = r
        .rows
        .statuses
        .iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    t.row("final states", statuses.join(", "));
    t.row(
        "provider payments (simulator)",
        r.provider_payments.map_or("n/a".into(), |p| p.to_string()),
    );
    t.row(
        "window (first bell/submit → last final)",
        format!("{:.2} s", r.window_s),
    );
    // The targets for a 2-vCPU machine of the kind docs/benchmark.md describes, with
    // Postgres, RabbitMQ and the fleet on the same two cores.
    let (tp_target, tp_figure) = match args.mode {
        Mode::Execute => (1200.0, "throughput, execute phase"),
        Mode::Pipeline => (1000.0, "throughput, whole pipeline"),
    };
    if let Some(p) = &r.provider_rate {
        // The provider's rate bounds the run: how close to it, and how politely.
        t.row(
            "throughput (provider-bound)",
            format!("{:.1} ops/s", r.throughput_ops_s),
        );
        t.at_most(
            "window ÷ (ops ÷ provider rate)",
            format!(
                "{:.3} ({:.2} s for {:.2} s at {}/s)",
                p.window_over_ideal, r.window_s, p.ideal_s, p.limit_per_s
            ),
            p.window_over_ideal,
            (1.15, ""),
        );
        t.target(
            "refused by the provider (429) per operation",
            p.refused_per_op.map_or("n/a".into(), |x| {
                format!("{x:.3} ({} refused)", p.refused.unwrap_or(0))
            }),
            "< 0.1",
            p.refused_per_op.map(|x| x < 0.1),
        );
    } else {
        t.target(
            tp_figure,
            format!("{:.0} ops/s", r.throughput_ops_s),
            format!("≥ {tp_target:.0} ops/s"),
            Some(r.throughput_ops_s >= tp_target),
        );
    }
    if let Some(s) = r.ring_s {
        t.row(
            "bells rung by the bench in",
            format!("{s:.2} s ({:.0}/s)", r.ops as f64 / s.max(1e-9)),
        );
    }
    if let Some(p) = &r.pipeline {
        t.row(
            "submitted by the bench",
            format!(
                "{:.2} s ({:.0}/s achieved, {} asked)",
                p.submit_s,
                p.submit_rate,
                args.rate.map_or("no limit".into(), |r| format!("{r:.0}/s"))
            ),
        );
        t.row("finals per second", per_second(&r.rows.finals_per_second));
    }
    let p99 = r.rows.approve_to_final.p99_ms;
    match args.mode {
        Mode::Pipeline => {
            t.target(
                "latency approve→final",
                lat(&r.rows.approve_to_final),
                "p99 ≤ 50 ms at 300 ops/s",
                Some(p99 <= 50.0),
            );
            if let Some(warm) = &r.rows.approve_to_final_warm {
                t.row(
                    concat!("latency approve→final ", after_warm_up!()),
                    lat(warm),
                );
            }
            t.row(
                "latency prepared→approved (bench approver)",
                lat(&r.rows.prepared_to_approved),
            );
        }
        Mode::Execute => {
            t.row(
                "latency approve→final (incl. setup)",
                lat(&r.rows.approve_to_final),
            );
            if let Some(rf) = &r.rows.ring_to_final {
                t.row("latency bell→final", lat(rf));
            }
        }
    }
    match args.rate {
        // At low load nothing may wait for a batch to fill.
        Some(rate) if args.mode == Mode::Pipeline && rate <= LOW_LOAD_RATE => {
            let p50 = r.rows.claim_to_final.p50_ms;
            t.target(
                "latency claim→final",
                lat(&r.rows.claim_to_final),
                format!("p50 ≤ 5 ms at ≤ {LOW_LOAD_RATE:.0} ops/s"),
                Some(p50 <= 5.0),
            );
        }
        _ => t.row("latency claim→final", lat(&r.rows.claim_to_final)),
    }
    if let (Some(c), Some(x)) = (pg.setup_commits_per_op, pg.setup_xacts_per_op) {
        t.row(
            "postgres commits/op, setup (insert+approve)",
            format!("{c:.2} (transactions {x:.2})"),
        );
    }
    t.row(
        &format!("postgres commits/op, {} window", args.mode.as_str()),
        format!(
            "{:.2} (transactions {:.2}, rollbacks {:.3})",
            pg.commits_per_op, pg.xacts_per_op, pg.rollbacks_per_op
        ),
    );
    t.at_most(
        "postgres commits/op, happy path total",
        format!("{:.2}", pg.happy_path_commits_per_op),
        pg.happy_path_commits_per_op,
        (4.0, ""),
    );
    t.row(
        &format!("postgres WAL/op, {} window", args.mode.as_str()),
        format!(
            "{:.1} kB ({:.2} full-page images, {:.2} flushes); checkpoints begun {} ({} buffers written)",
            pg.wal_kb_per_op,
            pg.wal_fpi_per_op,
            pg.wal_syncs_per_op,
            pg.window.checkpoints,
            pg.window.checkpoint_buffers
        ),
    );
    t.row(
        "postgres statements/op",
        pg.statements_per_op
            .map_or("n/a (see note)".into(), |s| format!("{s:.2}")),
    );
    t.row(
        "postgres rows inserted/updated per op",
        format!(
            "{:.2} / {:.2}",
            pg.rows_inserted_per_op, pg.rows_updated_per_op
        ),
    );
    let b = &r.broker;
    t.row(
        "broker messages/op published / delivered",
        format!("{:.2} / {:.2}", b.published_per_op, b.delivered_per_op),
    );
    for p in &u.processes {
        let msgs = p.messages.map_or(String::new(), |m| {
            format!(", {:.0} pub / {:.0} consumed", m.published, m.consumed)
        });
        t.row(
            &format!("cpu {}", p.name),
            format!(
                "{:.2} s = {:.3} ms/op, peak RSS {:.1} MiB{msgs}",
                p.cpu_s, p.cpu_ms_per_op, p.peak_rss_mib
            ),
        );
    }
    let postgres = format!(
        "{:.3} ms (every postgres process {:.3} ms)",
        u.postgres_fleet_cpu_ms_per_op, u.postgres_cpu_ms_per_op
    );
    const PG_FIGURE: &str = "postgres cpu/op (the fleet's backends)";
    let pg_cpu = u.postgres_fleet_cpu_ms_per_op;
    if args.mode == Mode::Execute {
        t.at_most(PG_FIGURE, postgres, pg_cpu, (0.8, "ms"));
        let execute = u.execute_cpu_ms_per_op;
        let shown = format!("{execute:.3} ms");
        t.at_most("fleet-execute cpu/op", shown, execute, (0.3, "ms"));
    } else {
        // The whole pipeline's budget: intake, approval, claim, answer and the relay.
        t.at_most(PG_FIGURE, postgres, pg_cpu, (2.5, "ms"));
    }
    let by_component = u
        .postgres_fleet_cpu_ms_per_op_by_component
        .iter()
        .filter(|(_, ms)| **ms >= 0.0005)
        .map(|(c, ms)| format!("{c} {ms:.3}"))
        .collect::<Vec<_>>()
        .join(", ");
    t.row("postgres cpu/op by component (ms)", by_component);
    t.row(
        "rabbitmq cpu/op",
        format!("{:.3} ms", u.rabbitmq_cpu_ms_per_op),
    );
    t.at_most(
        "worker cpu/op (all workers)",
        format!(
            "{:.3} ms (execute {:.3} ms)",
            u.workers_cpu_ms_per_op, u.execute_cpu_ms_per_op
        ),
        u.workers_cpu_ms_per_op,
        (0.4, "ms"),
    );
    let rss = u.max_worker_peak_rss_mib;
    t.at_most(
        "worker peak RSS (largest)",
        format!("{rss:.1} MiB"),
        rss,
        (64.0, "MiB"),
    );
    t.row(
        "cpu bench / postgres / rabbitmq / other",
        format!(
            "{:.2} / {:.2} / {:.2} / {:.2} s",
            u.bench_cpu_s, u.postgres_cpu_s, u.rabbitmq_cpu_s, u.other_cpu_s
        ),
    );
    t.row(
        "machine busy",
        format!(
            "{:.2} of {:.2} cpu-s ({:.0}%), stolen {:.2} cpu-s",
            u.machine_busy_cpu_s,
            u.machine_capacity_cpu_s,
            100.0 * u.machine_busy_cpu_s / u.machine_capacity_cpu_s.max(1e-9),
            u.machine_steal_cpu_s
        ),
    );
    t.targets()
}
