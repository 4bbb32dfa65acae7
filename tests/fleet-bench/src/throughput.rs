//! The throughput run (execute and pipeline modes): set up the database, start the
//! fleet, drive the load, wait until every operation is final, take the closing
//! readings, and hand the figures to the report.
//!
//! Order matters for honest counts: the execute-mode setup runs before any worker is
//! started and is read with every connection closed (so its counters are exact); the
//! window's Postgres counters are read only after the fleet stopped and every connection
//! to the bench database is gone (Postgres flushes a backend's counters when it exits).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::Utc;
use fleet_broker::{BrokerConfig, Publisher};
use tokio::time::Instant;

use super::database::{self, BenchDb};
use super::fleet::{BenchFleet, FleetSpec, EXECUTE, PREPARE, RECONCILE, RELAY, WEBHOOK_INGEST};
use super::history::{self, Prelude, PreludeFigures};
use super::load::{self, BenchTally, TENANT};
use super::machine::Machine;
use super::measure::{self, ProcSample};
use super::report::{self, Config, Figures, PgFigures};
use super::sql::BenchSql;
use super::{calibrate, compare, latency, procfs, seed, settle, BenchArgs, Mode};
use fleetctl::args::Connection;
use fleetctl::processes;

const SMOKE_OPS: usize = 200;
const DEFAULT_OPS: usize = 5_000;
/// With --provider-rate: about 15 s at 40/s.
const DEFAULT_PACED_OPS: usize = 600;
const FINAL_POLL: Duration = Duration::from_millis(20);
/// Worker settings a reader needs next to the figures (inherited from the environment).
const WORKER_ENV: [&str; 6] = [
    "CONCURRENCY",
    "PREFETCH",
    "DB_POOL_SIZE",
    "SWEEP_INTERVAL_MS",
    "LEASE_TTL_MS",
    "UNSTARTED_REDRIVE_MS",
];
/// Execute mode: the approved rows wait for their bells; the sweeper must not ring them.
const EXECUTE_MODE_REDRIVE_MS: &str = "3600000";

fn ops_for(args: &BenchArgs) -> anyhow::Result<usize> {
    if let Some(d) = args.duration_s {
        anyhow::ensure!(
            args.mode == Mode::Pipeline,
            "--duration-s is for --mode pipeline"
        );
        let rate = args.rate.context("--duration-s needs --rate")?;
        return Ok((rate * d as f64).ceil() as usize);
    }
    Ok(args.ops.unwrap_or(if args.smoke {
        SMOKE_OPS
    } else if args.provider_rate.is_some() {
        DEFAULT_PACED_OPS
    } else {
        DEFAULT_OPS
    }))
}

fn pool_size(args: &BenchArgs) -> usize {
    load::SETUP_TASKS.max(usize::from(args.publishers)) + 2
}

/// Connections of the bench's own SQL: one poll or reading at a time, and one spare.
const SQL_POOL: usize = 2;

/// Reads the counters once nothing is connected to the bench database: the caller has
/// dropped every pool of its own on it.
async fn settled_counters(
    db: &BenchDb,
    notes: &mut Vec<String>,
) -> anyhow::Result<database::PgCounters> {
    if !db.wait_disconnected().await? {
        notes.push("some connections to the bench database outlived the run: its Postgres counters may miss their last second".into());
    }
    db.counters().await
}

/// One set of binaries to run: where they are, which `fleetctl` migrates the bench
/// database for them (`None`: this one), what the report calls them and where its JSON goes.
pub struct BinSet {
    pub bin_dir: PathBuf,
    pub migrator: Option<PathBuf>,
    pub label: String,
    pub json: PathBuf,
}

/// `fleet-bench` in execute or pipeline mode: one run with --bin-dir, or, with
/// --baseline-bin, --rounds pairs (baseline first, then the candidate) and the two side by side.
pub async fn run(conn: &Connection, args: &BenchArgs) -> anyhow::Result<()> {
    let candidate = processes::bin_dir(args.bin_dir.as_deref())?;
    let json = args.json_path();
    if let Some(ops) = args.history {
        anyhow::ensure!(
            args.baseline_bin.is_none(),
            "--history makes three runs of its own (each --rounds times); it takes no --baseline-bin"
        );
        let set = BinSet {
            bin_dir: candidate,
            migrator: None,
            label: "candidate".into(),
            json,
        };
        return history::run(conn, args, &set, ops).await;
    }
    let Some(baseline) = &args.baseline_bin else {
        if args.rounds == 1 {
            let set = BinSet {
                bin_dir: candidate,
                migrator: None,
                label: "candidate".into(),
                json,
            };
            run_set(conn, args, &set, Prelude::Empty).await?;
            return Ok(());
        }
        let mut runs = Vec::new();
        for round in 1..=args.rounds {
            let set = BinSet {
                bin_dir: candidate.clone(),
                migrator: None,
                label: "candidate".into(),
                json: compare::suffixed(&json, &format!("run-{round}")),
            };
            println!("\n== run {round} of {} ==", args.rounds);
            runs.push(run_set(conn, args, &set, Prelude::Empty).await?.0);
        }
        return compare::finish_repeated(
            args,
            &candidate,
            &runs,
            &compare::suffixed(&json, "runs"),
        );
    };
    let fleetctl = baseline.join("fleetctl");
    let migrator = fleetctl.exists().then_some(fleetctl);
    let mut pairs = Vec::new();
    for round in 1..=args.rounds {
        let b = BinSet {
            bin_dir: baseline.clone(),
            migrator: migrator.clone(),
            label: "baseline".into(),
            json: compare::suffixed(&json, &format!("baseline-{round}")),
        };
        let c = BinSet {
            bin_dir: candidate.clone(),
            migrator: None,
            label: "candidate".into(),
            json: compare::suffixed(&json, &format!("candidate-{round}")),
        };
        println!("\n== round {round} of {} ==", args.rounds);
        let (before, _) = run_set(conn, args, &b, Prelude::Empty).await?;
        let (after, _) = run_set(conn, args, &c, Prelude::Empty).await?;
        pairs.push((before, after));
    }
    compare::finish(
        args,
        baseline,
        &candidate,
        &pairs,
        &compare::suffixed(&json, "compare"),
    )
}

/// One run with `set`'s binaries on a fresh database that `prelude` fills first.
pub async fn run_set(
    conn: &Connection,
    args: &BenchArgs,
    set: &BinSet,
    prelude: Prelude,
) -> anyhow::Result<(compare::Key, PreludeFigures)> {
    let started_at = Utc::now();
    let ops = ops_for(args)?;
    anyhow::ensure!(ops > 0, "nothing to run: --ops 0");
    anyhow::ensure!(
        args.provider_rate.is_none() || args.mode == Mode::Execute,
        "--provider-rate is for --mode execute (intake's payee lookups would share the provider's rate)"
    );
    if args.mode == Mode::Execute && args.rate.is_some() {
        eprintln!("--rate applies to --mode pipeline; the execute mode rings every bell at once");
    }
    let bin_dir = &set.bin_dir;
    let db = BenchDb::recreate(
        conn.db.database_url.expose(),
        &args.db_name,
        set.migrator.as_deref(),
    )
    .await?;
    let machine = Machine::measure(&db).await?;
    let broker =
        BrokerConfig::new(conn.amqp.amqp_url.expose()).with_namespace(args.namespace.clone());
    fleet_broker::delete_namespace(&broker).await;
    let mut notes = Vec::new();
    println!(
        "fleet-bench: mode {}, {ops} operations, database {}, namespace {}, {} binaries {}",
        args.mode.as_str(),
        args.db_name,
        args.namespace,
        set.label,
        bin_dir.display()
    );

    let sql = db.sql(SQL_POOL)?;
    if args.preload_final > 0 {
        let t = Instant::now();
        seed::history(&sql, args.preload_final).await?;
        seed::vacuum_analyze(&sql).await?;
        println!(
            "preloaded {} final operations in {:.1} s",
            args.preload_final,
            t.elapsed().as_secs_f64()
        );
    }
    let prelude_kind = prelude;
    let mut prelude = prelude.apply(&sql, &db.url).await?;
    prelude.settled = settle::settle(&sql).await?;
    println!(
        "settled: {:.0} MiB of dirty page cache before, {:.0} MiB after a checkpoint ({:.1} s) and a sync ({:.1} s)",
        prelude.settled.dirty_mib_before,
        prelude.settled.dirty_mib_after,
        prelude.settled.checkpoint_s,
        prelude.settled.sync_s
    );
    let statements_ok = db.statements_available(&sql).await?;
    let intents = Arc::new(load::intents(ops));
    let setup = if args.mode == Mode::Execute {
        let before = settled_counters(&db, &mut notes).await?;
        let store = db.store(pool_size(args))?;
        let t = Instant::now();
        load::prepare_and_approve(&store, &intents).await?;
        println!(
            "prepared and approved {ops} operations in {:.1} s (workers not started yet)",
            t.elapsed().as_secs_f64()
        );
        load::mark_setup_events_published(&sql).await?;
        drop(store);
        Some(settled_counters(&db, &mut notes).await?.since(&before))
    } else {
        None
    };
    drop(sql);

    let replicas = [
        (PREPARE, args.replicas),
        (EXECUTE, args.execute_replicas()),
        (RECONCILE, args.replicas),
        (WEBHOOK_INGEST, args.replicas),
        (RELAY, args.replicas),
    ];
    let mut worker_env = Vec::new();
    if args.mode == Mode::Execute {
        worker_env.push(("UNSTARTED_REDRIVE_MS", EXECUTE_MODE_REDRIVE_MS.to_owned()));
    }
    if let Prelude::Lived { .. } = prelude_kind {
        // The seeded history is what a fleet with these retentions leaves; the workers
        // keep the same, so that the run measures the history and not a relay or
        // receiver catching up on a shorter retention (the prune is its own figure).
        worker_env.push((
            "OUTBOX_RETENTION_S",
            (seed::LIVED_OUTBOX_DAYS * 86_400).to_string(),
        ));
        worker_env.push((
            "WEBHOOK_RETENTION_S",
            (seed::LIVED_WEBHOOK_DAYS * 86_400).to_string(),
        ));
    }
    let mut sim_env = Vec::new();
    if let Some(rate) = args.provider_rate {
        sim_env.push(("SIM_RATE_LIMIT_PER_S", rate.to_string()));
        worker_env.push(("PAYMENTS_RATE_PER_S", rate.to_string()));
    }
    let spec = FleetSpec {
        bin_dir,
        log_dir: &args.log_dir,
        database_url: &db.url,
        amqp_url: conn.amqp.amqp_url.expose(),
        namespace: &args.namespace,
        port_base: args.port_base,
        replicas,
        log_level: &args.worker_log,
        worker_env,
        sim_env,
    };
    let mut fleet = BenchFleet::start(&spec).await?;
    println!(
        "started the simulator and {} worker processes (logs in {})",
        fleet.workers().count(),
        args.log_dir.display()
    );
    let measured = measure_window(
        args,
        &db,
        &broker,
        &fleet,
        &intents,
        statements_ok.is_ok(),
        &mut notes,
    )
    .await;
    fleet.stop().await;
    let window = measured?;

    let pg_after = settled_counters(&db, &mut notes).await?;
    let sql = db.sql(SQL_POOL)?;
    let statements_after = match &statements_ok {
        Ok(()) => Some(database::statements(&sql).await?),
        Err(_) => None,
    };
    if let Some(bells) = &window.bells {
        latency::record_bells(&sql, bells).await?;
    }
    let rows = latency::read(&sql, window.bells.is_some(), db.created_at).await?;
    drop(sql);
    fleet_broker::delete_namespace(&broker).await;
    if !args.keep_db {
        db.drop().await?;
    }

    let worker_env = WORKER_ENV
        .iter()
        .map(|k| {
            (
                k.to_string(),
                std::env::var(k).unwrap_or_else(|_| "default".into()),
            )
        })
        .chain(
            spec.worker_env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone())),
        )
        .collect::<BTreeMap<_, _>>();
    let config = Config::new(args, ops, bin_dir, replicas, worker_env);
    let pg = PgFigures::new(
        ops,
        pg_after.since(&window.pg_before),
        setup,
        BenchTally::get(&window.tally.xacts),
        statements_ok.err(),
        window
            .statements_before
            .as_ref()
            .zip(statements_after.as_ref())
            .map(|(b, a)| a.since(b)),
    );
    let figures = Figures {
        ops,
        started_at,
        window_start: window.start,
        rows,
        pg,
        usage: window.usage,
        load: window.load,
        ring_s: window.ring_s,
        provider_payments: window.provider_payments,
        provider_refused: window.provider_refused,
        tally: window.tally,
    };
    let machine = machine.with_window_speed(window.speed);
    let key = report::finish(args, machine, config, figures, notes, &set.json)?;
    Ok((key, prelude))
}

/// What happened between the opening and the closing readings.
struct Window {
    start: chrono::DateTime<Utc>,
    pg_before: database::PgCounters,
    statements_before: Option<database::Statements>,
    usage: measure::Usage,
    tally: Arc<BenchTally>,
    bells: Option<Vec<(String, chrono::DateTime<Utc>)>>,
    ring_s: Option<f64>,
    load: Option<load::PipelineLoad>,
    provider_payments: Option<i64>,
    /// The requests the simulator answered 429.
    provider_refused: Option<i64>,
    speed: Option<calibrate::SpeedDuringWindow>,
}

async fn measure_window(
    args: &BenchArgs,
    db: &BenchDb,
    broker: &BrokerConfig,
    fleet: &BenchFleet,
    intents: &Arc<Vec<load::BenchIntent>>,
    statements: bool,
    notes: &mut Vec<String>,
) -> anyhow::Result<Window> {
    let http = reqwest::Client::new();
    let k = usize::from(args.publishers);
    let mut publishers = Vec::new();
    for _ in 0..(if args.mode == Mode::Pipeline {
        2 * k
    } else {
        k
    }) {
        publishers.push(Publisher::connect(broker).await?);
    }
    let store = db.store(pool_size(args))?;
    let sql = db.sql(SQL_POOL)?;
    let tally = Arc::new(BenchTally::default());
    let tck = procfs::clk_tck();

    let pg_before = db.counters().await?;
    let statements_before = if statements {
        tally
            .xacts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(database::statements(&sql).await?)
    } else {
        None
    };
    let sample_before = ProcSample::take(fleet, &http).await?;
    let start = Utc::now();
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    let (mut bells, mut ring_s, mut pipeline) = (None, None, None);
    let speed_probe = calibrate::SpeedProbe::start();
    let drive = async {
        match args.mode {
            Mode::Execute => {
                let t = Instant::now();
                bells = Some(load::ring_all(&publishers, intents, &tally).await?);
                ring_s = Some(t.elapsed().as_secs_f64());
            }
            Mode::Pipeline => {
                pipeline = Some(
                    load::pipeline(
                        &store,
                        &sql,
                        &publishers[..k],
                        &publishers[k..],
                        intents,
                        args.rate,
                        &tally,
                    )
                    .await?,
                )
            }
        }
        wait_all_final(&sql, &tally, db.created_at).await
    };
    tokio::time::timeout_at(deadline, drive)
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "not every operation was final after {} s (--timeout-s); see the logs in {}",
                args.timeout_s,
                args.log_dir.display()
            )
        })??;
    let speed = speed_probe.finish();
    let sample_after = ProcSample::take(fleet, &http).await?;
    // Read while the fleet still runs: its backends are the ones connected now.
    let fleet_backends = db.fleet_backends().await?;
    let usage = measure::usage(
        &sample_before,
        &sample_after,
        &fleet.members,
        &fleet_backends,
        intents.len(),
        tck,
    );
    let provider_payments = sim_payments(&http, &fleet.sim_url).await;
    if provider_payments.is_none() {
        notes.push("the simulator's effect counter could not be read".into());
    }
    let provider_refused = sim_refused(&http, &fleet.sim_url).await;
    for p in &publishers {
        p.close().await;
    }
    Ok(Window {
        start,
        pg_before,
        statements_before,
        usage,
        tally,
        bells,
        ring_s,
        load: pipeline,
        provider_payments,
        provider_refused,
        speed,
    })
}

/// Polls until none of the operations the run created (since `since`) is in a
/// non-final state: the tenant's range of `operations_tenant_created`, whatever history
/// the tenant has.
async fn wait_all_final(
    sql: &BenchSql,
    tally: &BenchTally,
    since: chrono::DateTime<Utc>,
) -> anyhow::Result<()> {
    loop {
        let client = sql.client().await?;
        let open: i64 = client
            .query_one(
                "SELECT /* fleet-bench */ count(*) FROM operations
                 WHERE status IN ('not_started', 'in_progress', 'accepted', 'unknown') AND tenant_id = $1
                   AND created_at >= $2",
                &[&TENANT, &since],
            )
            .await?
            .get(0);
        drop(client);
        tally
            .xacts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if open == 0 {
            return Ok(());
        }
        tokio::time::sleep(FINAL_POLL).await;
    }
}

/// A simulator admin route's JSON answer, if it gave one.
async fn sim_json(http: &reqwest::Client, sim_url: &str, path: &str) -> Option<serde_json::Value> {
    http.get(format!("{sim_url}{path}"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()
}

async fn sim_payments(http: &reqwest::Client, sim_url: &str) -> Option<i64> {
    sim_json(http, sim_url, "/_sim/effects").await?["payments"].as_i64()
}

/// The requests the simulator refused for its rate (its request log holds every 429).
async fn sim_refused(http: &reqwest::Client, sim_url: &str) -> Option<i64> {
    let v = sim_json(http, sim_url, "/_sim/requests").await?;
    let refused = v["data"]
        .as_array()?
        .iter()
        .filter(|r| r["status"] == 429)
        .count();
    i64::try_from(refused).ok()
}
