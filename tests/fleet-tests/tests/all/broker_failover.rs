//! The fleet on a three-node RabbitMQ cluster of its own, losing a node twice under load.
//!
//! Every fleet queue is a quorum queue with a member on each node. Two replicas of prepare,
//! execute, reconcile and the relay run as real processes given every node's URL;
//! intents arrive at a steady pace through the harness's publisher (on the same list). The
//! node leading the execute queue is SIGKILLed and started again, then the node leading
//! the intake queue (or another queue, if that is the first node); all along, a worker replica picked at random is SIGKILLed and
//! replaced every one to two seconds. Approvals go through two fleet-api replicas (the
//! client takes them in turn and retries what was not answered with the same approval),
//! and each agent waits for its outcome there (`wait_for=final`); with each node kill an
//! API replica is SIGKILLed and started again. The promise must hold: nothing lost (every
//! intent whose publish the cluster confirmed is an operation, and every operation ends
//! final), nothing done twice, no blind retry, every approval answered 200 recorded once
//! (from the rows), every agent's wait answered with the final state, and outcome events
//! in order per operation with no gap. Reported: the longest stall of each step of the
//! pipeline after each kill, the publishes the cluster refused meanwhile, and how long
//! each node took to boot.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fleet_broker::lapin::options::{BasicGetOptions, QueueBindOptions, QueueDeclareOptions};
use fleet_broker::lapin::types::{AMQPValue, FieldTable};
use fleet_broker::lapin::{Connection, ConnectionProperties};
use fleet_broker::Queue;
use fleet_tests::driven_answers::Unkept;
use fleet_tests::{
    alone, check_promise, hash_of, intent, op_of, ApiReplicas, Driven, EventOrder, Infra,
    RabbitCluster, RetryingClient, TestFleet, WorkerProcess, TWO_OF_EACH_WORKER,
};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::time::{sleep, sleep_until, Instant};

const WORKER_ENV: [(&str, &str); 7] = [
    ("LEASE_TTL_MS", "2000"),
    ("SWEEP_INTERVAL_MS", "200"),
    // A doorbell lost with a node (its publish unconfirmed) is rung again by reconcile.
    ("UNSTARTED_REDRIVE_MS", "2000"),
    ("LOOKUP_RECHECK_MS", "300"),
    ("CONCURRENCY", "8"),
    ("RELAY_POLL_INTERVAL_MS", "25"),
    ("RUST_LOG", "warn"),
];

/// Submissions are spaced this far apart (about 13 a second) from the start until a while
/// after the second node is back, so the pipeline is busy through both kills.
const PACE: Duration = Duration::from_millis(75);

fn epoch_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_losing_nodes_loses_and_duplicates_nothing() {
    // Three broker nodes, eight workers and the load fill both cores.
    let _alone = alone().await;
    let mut cluster = RabbitCluster::start(3).await;
    let infra = Infra {
        amqp_url: cluster.amqp_url(),
        ..Infra::shared()
    };
    let fleet = TestFleet::start_on(infra, Default::default()).await;
    let ns = fleet.broker.namespace.clone();
    let events = EventsQueue::declare(&cluster, &fleet).await;
    let mut procs: Vec<WorkerProcess> = TWO_OF_EACH_WORKER
        .iter()
        .map(|name| fleet.spawn_process(name, &WORKER_ENV))
        .collect();
    for (queue, members) in cluster.quorum_members(&ns).await {
        assert_eq!(members, 3, "{queue} is replicated on every node");
    }
    let mut apis = ApiReplicas::start(&fleet, 2, &WORKER_ENV).await;
    let client = RetryingClient::new(&fleet, &apis, Duration::from_secs(90)).await;

    let started = Instant::now();
    let queues = [
        fleet.broker.queue_name(Queue::OperationsExecute),
        fleet.broker.queue_name(Queue::IntentsPrepare),
    ];
    let chaos_over = AtomicBool::new(false);
    let submitted: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    let driven: Mutex<Vec<Driven>> = Mutex::new(Vec::new());
    let publishes = Mutex::new(Publishes::default());

    // The node kills run beside the load: the leader of the execute queue, then (once the
    // first is back and the pipeline ran a while) the leader of the intake queue, or of
    // another queue if that is the node killed first. The load goes on until a while after
    // the second node is back. Each kill is reported with the work queues its node led.
    let chaos = async {
        let mut kills = Vec::new();
        let mut led = Vec::new();
        for queue in &queues {
            sleep(Duration::from_secs(3)).await;
            let leaders = cluster.leaders(&ns).await;
            let victim = victim_for(&leaders, queue, &kills);
            cluster.kill(victim);
            kills.push((victim, SystemTime::now()));
            cluster.note(&format!("node {} killed by the test", victim + 1));
            // An API replica dies with the node and is started again at once.
            apis.kill_and_respawn(&fleet, kills.len() % 2);
            led.push(work_queues_led(&leaders, victim, &ns));
            sleep(Duration::from_secs(3)).await;
            cluster.restart(victim).await;
        }
        sleep(Duration::from_secs(3)).await;
        chaos_over.store(true, Ordering::Relaxed);
        (kills, led)
    };
    let load = futures_util::stream::iter(0u32..)
        .take_while(|_| std::future::ready(!chaos_over.load(Ordering::Relaxed)))
        // Each intent's task lives until its agent's wait answered: many at once.
        .for_each_concurrent(128, |n| {
            let (fleet, submitted, publishes, client, driven) =
                (&fleet, &submitted, &publishes, &client, &driven);
            async move {
                sleep_until(started + PACE * n).await;
                let intent = intent();
                let (op, hash) = (op_of(&intent), hash_of(&intent));
                let asked = Instant::now();
                let refused = submit_until_confirmed(fleet, &intent).await;
                publishes.lock().unwrap().record(refused, asked.elapsed());
                submitted.lock().unwrap().push((op.clone(), hash.clone()));
                // Approved over the API (404 until prepare stored it); a doorbell lost
                // with a node is rung again by reconcile's redrive.
                let until = Instant::now() + client.deadline;
                let approved = client.approve(&op, &hash, until).await;
                let final_status = match approved {
                    true => client.wait_final(&op, until + client.deadline).await,
                    false => None,
                };
                driven.lock().unwrap().push(Driven {
                    op,
                    hash,
                    submitted: true,
                    approved,
                    final_status,
                });
            }
        });
    // Meanwhile a worker replica, picked at random, is SIGKILLed and replaced every 1–2 s.
    let worker_kills = async {
        let mut rng = started.elapsed().as_nanos() as u64 | 1;
        let mut killed = 0;
        while !chaos_over.load(Ordering::Relaxed) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            sleep(Duration::from_millis(1_000 + rng % 1_000)).await;
            let victim = (rng % procs.len() as u64) as usize;
            procs[victim].kill9();
            procs[victim] = fleet.spawn_process(TWO_OF_EACH_WORKER[victim], &WORKER_ENV);
            killed += 1;
        }
        killed
    };
    let ((kills, led), (), workers_killed) = tokio::join!(chaos, load, worker_kills);
    let load_ended = SystemTime::now();
    let ops = submitted.into_inner().unwrap();
    let driven = driven.into_inner().unwrap();
    let publishes = publishes.into_inner().unwrap();
    let n_ops = ops.len();

    fleet.settles(Duration::from_secs(120)).await;
    let audit = check_promise(&fleet, &ops).await;
    let unkept = Unkept::of(&fleet, &driven).await;
    let mut stalls = Vec::new();
    for (step, filter) in STEPS {
        let times = times_of(&fleet, filter).await;
        let after_kills: Vec<String> = kills
            .iter()
            .enumerate()
            .map(|(k, (_, at))| {
                // Each kill's window ends where the next kill's begins.
                let until = kills.get(k + 1).map_or(load_ended, |(_, next)| *next);
                format!("{:.2}", longest_stall(&times, epoch_s(*at), epoch_s(until)))
            })
            .collect();
        stalls.push(format!("{step}:{}", after_kills.join("/")));
    }
    let victims: Vec<String> = kills
        .iter()
        .zip(&led)
        .map(|((node, _), led)| format!("node{}(leading {})", node + 1, led.join("+")))
        .collect();
    let order = events.check_order(&fleet).await;
    println!(
        "broker failover: operations={n_ops} node_kills={} worker_kills={workers_killed} api_restarts={} final={:?} escalated={} lost={} duplicates={} blind_retries={} drift={} mismatched={} unapproved={} approvals_lost={} approvals_twice={} wrong_answers={} killed=[{}] longest_stall_s=[{}] publishes_refused={} longest_publish_wait_s={:.2} events={} out_of_order={} gaps={} boots_s=[{}]",
        kills.len(),
        apis.restarts,
        audit.by_status,
        audit.escalated,
        audit.lost,
        audit.duplicates,
        audit.blind_retries,
        audit.drift,
        audit.mismatched,
        unkept.unapproved,
        unkept.approvals_lost,
        unkept.approvals_twice,
        unkept.wrong_answers.len(),
        victims.join(","),
        stalls.join(" "),
        publishes.refused,
        publishes.longest_wait.as_secs_f64(),
        order.events,
        order.out_of_order,
        order.gaps,
        cluster.boot_times().join(" "),
    );
    audit.assert_kept("broker failover");
    unkept.assert_none();
    apis.all_running();
    assert_eq!(kills.len(), 2);
    assert_eq!(
        order.out_of_order, 0,
        "events arrive in order per operation"
    );
    assert_eq!(order.gaps, 0, "no operation misses an event");
    drop(procs);
    drop(apis);
    fleet.stop().await;
    drop(cluster);
}

/// The node to kill next: the leader of `queue`, or, when that node was killed before, the
/// leader of another fleet queue that was not: every kill takes some leadership down.
fn victim_for(
    leaders: &BTreeMap<String, usize>,
    queue: &str,
    kills: &[(usize, SystemTime)],
) -> usize {
    let killed = |node: &usize| kills.iter().any(|(k, _)| k == node);
    leaders
        .get(queue)
        .filter(|node| !killed(node))
        .or_else(|| leaders.values().find(|node| !killed(node)))
        .copied()
        .expect("some queue is led by a node not killed yet")
}

/// The work queues (not their retry and dead-letter queues) `node` leads, by wire name.
fn work_queues_led(leaders: &BTreeMap<String, usize>, node: usize, ns: &str) -> Vec<String> {
    leaders
        .iter()
        .filter(|(_, leader)| **leader == node)
        .filter_map(|(name, _)| name.strip_prefix(ns)?.strip_prefix('.'))
        .filter(|name| !name.ends_with(".retry") && !name.ends_with(".dead"))
        .filter(|name| !name.starts_with("test."))
        .map(str::to_owned)
        .collect()
}

/// What the agent's side saw: publishes the cluster refused (nacked, or lost with a node)
/// and the longest an intent waited until one was confirmed.
#[derive(Debug, Default)]
struct Publishes {
    refused: u32,
    longest_wait: Duration,
}

impl Publishes {
    fn record(&mut self, refused: u32, waited: Duration) {
        self.refused += refused;
        self.longest_wait = self.longest_wait.max(waited);
    }
}

/// Publishes until the cluster confirms it, counting the refusals: an agent's retry of an
/// unconfirmed publish is safe, since the operation id makes a second copy a no-op at
/// intake. A quorum queue that lost its leader refuses (nacks) publishes until it has
/// elected another.
async fn submit_until_confirmed(fleet: &TestFleet, intent: &Value) -> u32 {
    let bytes = serde_json::to_vec(intent).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut refused = 0;
    while fleet
        .publisher
        .publish(Queue::IntentsPrepare, &bytes)
        .await
        .is_err()
    {
        refused += 1;
        assert!(
            Instant::now() < deadline,
            "no node confirmed an intent in 60 s"
        );
        sleep(Duration::from_millis(100)).await;
    }
    refused
}

/// The steps of the pipeline, each by the history rows that mark it: after a kill, the
/// step whose rows stop coming is the one that stalled.
const STEPS: [(&str, &str); 4] = [
    ("prepared", "kind = 'prepared'"),
    ("approved", "kind = 'approved'"),
    (
        "claimed",
        "kind = 'transition' AND to_status = 'in_progress'",
    ),
    (
        "completed",
        "kind = 'transition' AND to_status IN ('succeeded','failed')",
    ),
];

/// When each row matching `filter` was written (seconds since the epoch, sorted), by the
/// database clock.
async fn times_of(fleet: &TestFleet, filter: &str) -> Vec<f64> {
    let client = fleet.store.pooled_session().await.unwrap();
    let sql = format!(
        "SELECT extract(epoch FROM at)::float8 FROM operation_events WHERE {filter} ORDER BY 1"
    );
    let rows = client.query(&sql, &[]).await.unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// The longest time without one of `times` from `kill` on, over the next 15 s (or until
/// `until`): how long that step stood still after the node was lost.
fn longest_stall(times: &[f64], kill: f64, until: f64) -> f64 {
    let until = (kill + 15.0).min(until);
    let mut last = kill;
    let mut longest: f64 = 0.0;
    for &t in times.iter().filter(|t| **t > kill && **t <= until) {
        longest = longest.max(t - last);
        last = t;
    }
    longest.max(until - last)
}

/// A quorum queue bound to every outcome event, read once the run is over: what an agent
/// subscribed for the whole run would have received.
struct EventsQueue {
    name: String,
}

impl EventsQueue {
    async fn declare(cluster: &RabbitCluster, fleet: &TestFleet) -> EventsQueue {
        let name = format!("{}.test.events", fleet.broker.namespace);
        let conn = Connection::connect(&cluster.node_url(0), ConnectionProperties::default())
            .await
            .expect("a node");
        let channel = conn.create_channel().await.unwrap();
        let mut args = FieldTable::default();
        args.insert(
            "x-queue-type".into(),
            AMQPValue::LongString("quorum".into()),
        );
        channel
            .queue_declare(
                name.as_str().into(),
                QueueDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                args,
            )
            .await
            .unwrap();
        channel
            .queue_bind(
                name.as_str().into(),
                fleet.broker.events_exchange_name().as_str().into(),
                "#".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        let _ = conn.close(200, "OK".into()).await;
        EventsQueue { name }
    }

    /// Reads every event (waiting, within a deadline, until each operation's last one
    /// came) and judges their order ([`EventOrder`]).
    async fn check_order(&self, fleet: &TestFleet) -> EventOrder {
        let logged = fleet.logged_event_counts().await;
        let url = fleet.broker.node_urls()[0].to_owned();
        let conn = Connection::connect(&url, ConnectionProperties::default())
            .await
            .expect("a node");
        let channel = conn.create_channel().await.unwrap();
        let mut received = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = channel
                .basic_get(self.name.as_str().into(), BasicGetOptions { no_ack: true })
                .await
                .unwrap();
            let Some(message) = got else {
                if EventOrder::complete(&received, &logged) || Instant::now() > deadline {
                    break;
                }
                sleep(Duration::from_millis(200)).await;
                continue;
            };
            let event: Value = serde_json::from_slice(&message.delivery.data).unwrap();
            // Read as the type (unknown members refused); a mandate's event counts for none.
            let data = fleet_tests::operation_data(&event).map(|d| d.expect("an operation's data"));
            received.push(data.map_or_else(Default::default, |d| {
                (d.view.operation_id.as_str().to_owned(), d.sequence)
            }));
        }
        let _ = conn.close(200, "OK".into()).await;
        EventOrder::of(&received, &logged)
    }
}
