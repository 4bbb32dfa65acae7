//! The chaos soak: execute, reconcile and two fleet-api replicas run as real processes and
//! are SIGKILLed at random every 0.5–2 s (and restarted) while the provider simulator
//! injects every fault kind at 5% on every action's routes. The approvals are given over
//! the API while the kills go on (the client takes the replicas in turn and retries what
//! was not answered with the same approval), and each agent waits there for its outcome
//! (`wait_for=final`). The mix is mostly payments, with order status changes
//! (a conditional update settled from the order) and contracts (a keyed create the
//! provider settles later, looked up past a one-second deadline) among them. At the end
//! every operation must be final or escalated, and a checker reads the simulator's
//! request log and counters and the operation log:
//!
//! - duplicates: operations with more than one provider effect (must be 0);
//! - lost: approved operations neither final nor escalated (must be 0);
//! - blind retries: a claim after `unknown` without a lookup that found nothing in
//!   between (must be 0);
//! - drift: a keyed request under another key (or an unkeyed one with a key), or a row
//!   whose hash changed (must be 0);
//! - and every submitted operation stored, every history a chain of moves
//!   (`fleet_tests::check_promise` has the whole list);
//! - every approval answered 200 recorded once (from the rows), every agent's wait
//!   answered with the final state the row holds.
//!
//! CI runs 300 operations; `CHAOS_OPS=5000 CHAOS_SECONDS=300 cargo test -p fleet-tests
//! --test all chaos:: -- --nocapture` runs a large one. `CHAOS_SEED` replays a schedule.

use std::collections::HashMap;
use std::time::Duration;

use fleet_provider_sim::SimConfig;
use fleet_tests::driven_answers::Unkept;
use fleet_tests::{
    alone, check_promise, contract_intent, hash_of, intent, op_of, order_change_intent,
    ApiReplicas, Driven, RetryingClient, TestFleet, WorkerProcess,
};
use serde_json::{json, Value};
use tokio::time::{sleep, Instant};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: a seeded schedule that replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORKER_ENV: [(&str, &str); 16] = [
    ("LEASE_TTL_MS", "1000"),
    ("PAYMENTS_TIMEOUT_MS", "1000"),
    ("PAYMENTS_SEARCH_LAG_MS", "1000"),
    // The delay fault below holds a request 1.5 s, past the client's 1 s timeout.
    ("PAYMENTS_MAX_REQUEST_S", "2"),
    ("ORDERS_TIMEOUT_MS", "1000"),
    ("ORDERS_MAX_REQUEST_S", "2"),
    ("ESIGN_TIMEOUT_MS", "1000"),
    ("ESIGN_SEARCH_LAG_MS", "1000"),
    ("ESIGN_MAX_REQUEST_S", "2"),
    // A contract is sent by the provider a moment after it accepted it; no webhook here,
    // so it is looked up once its deadline passed.
    ("ACCEPTED_DEADLINE_S", "1"),
    ("SWEEP_INTERVAL_MS", "200"),
    ("LOOKUP_RECHECK_MS", "300"),
    ("UNSTARTED_REDRIVE_MS", "2000"),
    ("ESCALATE_AFTER_LOOKUPS", "20"),
    ("CONCURRENCY", "16"),
    ("RUST_LOG", "warn"),
];

/// Every side-effecting route of the mix, with the reads that settle it.
const ROUTES: [(&str, &[&str]); 3] = [
    ("POST /v1/payments", &["GET /v1/payments"]),
    ("POST /v1/orders/{id}/transitions", &["GET /v1/orders/{id}"]),
    (
        "POST /v1/envelopes",
        &["GET /v1/envelopes", "GET /v1/envelopes/{id}"],
    ),
];

const FAULT_KINDS: [&str; 5] = [
    "drop_before_commit",
    "drop_after_commit",
    "error_before_commit",
    "error_after_commit",
    "delay",
];

/// Of every 8 operations, one is an order status change and one a contract.
const MIX: usize = 8;

async fn inject_faults(fleet: &TestFleet) {
    let writes = ROUTES
        .iter()
        .flat_map(|(write, _)| FAULT_KINDS.map(|kind| (*write, kind)));
    let reads = ROUTES
        .iter()
        .flat_map(|(_, reads)| reads.iter().map(|read| (*read, "error_before_commit")));
    for (route, kind) in writes.chain(reads) {
        let mut f = json!({"route": route, "kind": kind, "probability": 0.05});
        match kind {
            "error_before_commit" => f["status"] = json!(503),
            "error_after_commit" => f["status"] = json!(500),
            "delay" => f["delay_ms"] = json!(1500),
            _ => {}
        }
        fleet.sim_fault(f).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_soak_kills_and_faults_lose_and_duplicate_nothing() {
    // Workers SIGKILLed and restarted every 0.5–2 s and 300 operations keep both cores
    // busy: a neighbour would be starved past its deadlines.
    let _alone = alone().await;
    let n_ops = env_or("CHAOS_OPS", 300) as usize;
    let chaos_for = Duration::from_secs(env_or("CHAOS_SECONDS", 20));
    let seed = env_or("CHAOS_SEED", 0x5EED_F1EE7);
    let mut rng = Rng(seed | 1);
    let mut fleet = TestFleet::start_with_sim(SimConfig {
        search_lag_ms: 200,
        esign_search_lag_ms: 200,
        ..Default::default()
    })
    .await;
    inject_faults(&fleet).await;
    fleet.spawn_prepare();

    let mut procs: Vec<(&str, WorkerProcess)> =
        ["fleet-execute", "fleet-execute", "fleet-reconcile"]
            .into_iter()
            .map(|name| (name, fleet.spawn_process(name, &WORKER_ENV)))
            .collect();

    let mut intents: Vec<Value> = Vec::with_capacity(n_ops);
    for n in 0..n_ops {
        intents.push(match n % MIX {
            3 => order_change_intent(&fleet.sim_order("paid").await, "paid", "fulfilled"),
            7 => contract_intent(&format!("cust_{n}")),
            _ => intent(),
        });
    }
    let ops: Vec<(String, String)> = intents.iter().map(|i| (op_of(i), hash_of(i))).collect();
    for i in &intents {
        fleet.submit(i).await;
    }
    let mut apis = ApiReplicas::start(&fleet, 2, &WORKER_ENV).await;
    let client = RetryingClient::new(&fleet, &apis, Duration::from_secs(120)).await;
    // Every operation approved over the API and waited for by its agent, while the kills
    // below go on.
    let driven: Vec<_> = ops
        .iter()
        .cloned()
        .map(|(op, hash)| {
            let client = client.clone();
            tokio::spawn(async move {
                let until = Instant::now() + client.deadline;
                let approved = client.approve(&op, &hash, until).await;
                let final_status = match approved {
                    true => client.wait_final(&op, until + client.deadline).await,
                    false => None,
                };
                Driven {
                    op,
                    hash,
                    submitted: true,
                    approved,
                    final_status,
                }
            })
        })
        .collect();

    // Chaos: kill a random worker or API replica every 0.5–2 s and start a replacement at
    // once.
    let mut kills = 0;
    let chaos_until = Instant::now() + chaos_for;
    while Instant::now() < chaos_until {
        sleep(Duration::from_millis(500 + rng.below(1500))).await;
        let victim = rng.below((procs.len() + apis.apis.len()) as u64) as usize;
        match procs.get_mut(victim) {
            Some((name, process)) => {
                process.kill9();
                *process = fleet.spawn_process(name, &WORKER_ENV);
            }
            None => apis.kill_and_respawn(&fleet, victim - procs.len()),
        }
        kills += 1;
    }

    // Settle: no more kills; every operation must become final or escalated.
    fleet
        .settles(Duration::from_secs(env_or("CHAOS_SETTLE_SECONDS", 180)))
        .await;

    let report = check_promise(&fleet, &ops).await;
    let mut answered = Vec::with_capacity(driven.len());
    for d in driven {
        answered.push(d.await.expect("a client task"));
    }
    let unkept = Unkept::of(&fleet, &answered).await;
    let requests = fleet.sim_requests(None).await;
    let mut by_answer: HashMap<String, usize> = HashMap::new();
    for r in &requests {
        let key = match (&r["status"], r["replayed"].as_bool()) {
            (Value::Null, _) => "dropped".to_owned(),
            (s, Some(true)) => format!("{s}_replayed"),
            (s, _) => s.to_string(),
        };
        *by_answer.entry(key).or_default() += 1;
    }
    println!(
        "chaos: seed={seed:#x} operations={n_ops} kills={kills} api_restarts={} provider_posts={} answers={by_answer:?} final={:?} escalated={} duplicates={} mismatched={} lost={} blind_retries={} drift={} unapproved={} approvals_lost={} approvals_twice={} wrong_answers={}",
        apis.restarts,
        requests.len(),
        report.by_status,
        report.escalated,
        report.duplicates,
        report.mismatched,
        report.lost,
        report.blind_retries,
        report.drift,
        unkept.unapproved,
        unkept.approvals_lost,
        unkept.approvals_twice,
        unkept.wrong_answers.len(),
    );
    report.assert_kept(&format!("seed {seed:#x}"));
    assert!(kills > 0);
    unkept.assert_none();
    apis.all_running();
    drop(procs);
    drop(apis);
    fleet.stop().await;
}
