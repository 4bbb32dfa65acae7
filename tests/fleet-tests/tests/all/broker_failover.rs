//! The fleet on a three-node RabbitMQ cluster of its own, losing a node twice under load.
//!
//! Every fleet queue is a quorum queue with a member on each node. Two replicas of prepare,
//! execute and the relay and one reconcile run as real processes given every node's URL;
//! intents arrive at a steady pace through the harness's publisher (on the same list). The
//! node leading the execute queue is SIGKILLed, started again, and then the node leading
//! the intake queue is. The promise must hold: nothing lost (every intent whose publish the
//! cluster confirmed is an operation, and every operation ends final), nothing done twice,
//! no blind retry, and outcome events in order per operation with no gap. The longest stall
//! of completions after each kill is reported.
//!
//! `BROKER_FAILOVER_OPS=1000` runs a larger load.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fleet_broker::lapin::options::{BasicGetOptions, QueueBindOptions, QueueDeclareOptions};
use fleet_broker::lapin::types::{AMQPValue, FieldTable};
use fleet_broker::lapin::{Connection, ConnectionProperties};
use fleet_broker::Queue;
use fleet_tests::{alone, hash_of, intent, op_of, Infra, RabbitCluster, TestFleet, WorkerProcess};
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

const REPLICATED: [&str; 7] = [
    "fleet-prepare",
    "fleet-prepare",
    "fleet-execute",
    "fleet-execute",
    "fleet-reconcile",
    "fleet-relay",
    "fleet-relay",
];

/// Submissions are spaced this far apart, so the pipeline is busy through both kills.
const PACE: Duration = Duration::from_millis(60);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn epoch_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_losing_nodes_loses_and_duplicates_nothing() {
    // Three broker nodes, seven workers and the load fill both cores.
    let _alone = alone().await;
    let n_ops = env_or("BROKER_FAILOVER_OPS", 300) as usize;
    let mut cluster = RabbitCluster::start(3).await;
    let infra = Infra {
        amqp_url: cluster.amqp_url(),
        ..Infra::shared()
    };
    let fleet = TestFleet::start_on(infra, Default::default()).await;
    let ns = fleet.broker.namespace.clone();
    let events = EventsQueue::declare(&cluster, &fleet).await;
    let procs: Vec<WorkerProcess> = REPLICATED
        .iter()
        .map(|name| fleet.spawn_process(name, &WORKER_ENV))
        .collect();
    for (queue, members) in cluster.quorum_members(&ns).await {
        assert_eq!(members, 3, "{queue} is replicated on every node");
    }

    let intents: Vec<Value> = (0..n_ops).map(|_| intent()).collect();
    let ops: Vec<(String, String)> = intents.iter().map(|i| (op_of(i), hash_of(i))).collect();
    let started = Instant::now();
    let load_for = PACE * n_ops as u32;
    let queues = [
        fleet.broker.queue_name(Queue::OperationsExecute),
        fleet.broker.queue_name(Queue::IntentsPrepare),
    ];

    // The kills run beside the load: the leader of the execute queue a fifth of the way
    // in, then (once the first is back) the leader of the intake queue.
    let chaos = async {
        let mut kills = Vec::new();
        let mut victims = Vec::new();
        for (n, queue) in queues.iter().enumerate() {
            sleep_until(started + load_for * (1 + 2 * n as u32) / 5).await;
            let mut victim = cluster.leader_of(queue).await;
            if victims.contains(&victim) {
                victim = (victim + 1) % cluster.size();
            }
            cluster.kill(victim);
            kills.push((victim, SystemTime::now()));
            victims.push(victim);
            sleep(Duration::from_secs(3)).await;
            cluster.restart(victim).await;
        }
        kills
    };
    let load = futures_util::stream::iter(intents.iter().zip(&ops).enumerate())
        .for_each_concurrent(16, |(n, (intent, (op, hash)))| {
            let fleet = &fleet;
            async move {
                sleep_until(started + PACE * n as u32).await;
                submit_until_confirmed(fleet, intent).await;
                fleet.prepared(op).await;
                // A doorbell lost with a node is rung again by reconcile's redrive.
                fleet.approve(op, hash).await.expect("approved");
            }
        });
    let (kills, ()) = tokio::join!(chaos, load);
    let load_ended = SystemTime::now();

    fleet.settles(Duration::from_secs(120)).await;
    let audit = fleet.audit(&ops).await;
    let completions = completion_times(&fleet).await;
    let stalls: Vec<String> = kills
        .iter()
        .map(|(node, at)| {
            let stall = longest_stall(&completions, epoch_s(*at), epoch_s(load_ended));
            format!("node{}:{stall:.2}s", node + 1)
        })
        .collect();
    let order = events.check_order(&fleet).await;
    println!(
        "broker failover: operations={n_ops} kills={} final={:?} escalated={} lost={} duplicates={} blind_retries={} drift={} mismatched={} longest_stall_after_kill=[{}] events={} out_of_order={} gaps={}",
        kills.len(),
        audit.by_status,
        audit.escalated,
        audit.lost,
        audit.duplicates,
        audit.blind_retries,
        audit.drift,
        audit.mismatched,
        stalls.join(" "),
        order.events,
        order.out_of_order,
        order.gaps,
    );
    audit.assert_promise_held("broker failover");
    assert_eq!(kills.len(), 2);
    assert_eq!(
        order.out_of_order, 0,
        "events arrive in order per operation"
    );
    assert_eq!(order.gaps, 0, "no operation misses an event");
    drop(procs);
    fleet.stop().await;
    drop(cluster);
}

/// Publishes until the cluster confirms it: an agent's retry of an unconfirmed publish is
/// safe, since the operation id makes a second copy a no-op at intake.
async fn submit_until_confirmed(fleet: &TestFleet, intent: &Value) {
    let bytes = serde_json::to_vec(intent).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while fleet
        .publisher
        .publish(Queue::IntentsPrepare, &bytes)
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "no node confirmed an intent in 60 s"
        );
        sleep(Duration::from_millis(100)).await;
    }
}

/// When each operation succeeded (seconds since the epoch, sorted), by the database clock.
async fn completion_times(fleet: &TestFleet) -> Vec<f64> {
    let client = fleet.store.pooled_session().await.unwrap();
    let rows = client
        .query(
            "SELECT extract(epoch FROM at)::float8 FROM operation_events \
             WHERE kind = 'transition' AND to_status IN ('succeeded','failed') ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// The longest time without a completion from `kill` on, over the next 15 s (or until the
/// load ended): how long the pipeline stood still after losing the node.
fn longest_stall(completions: &[f64], kill: f64, load_ended: f64) -> f64 {
    let until = (kill + 15.0).min(load_ended);
    let mut last = kill;
    let mut longest: f64 = 0.0;
    for &t in completions.iter().filter(|t| **t > kill && **t <= until) {
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

#[derive(Debug, Default)]
struct Order {
    events: usize,
    /// A first delivery of a sequence that was not the next one of its operation.
    out_of_order: usize,
    /// Operations whose highest sequence received is below the events their log holds.
    gaps: usize,
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

    /// Reads every event and checks each operation's sequence: first deliveries 1, 2, 3, …
    /// (a redelivered duplicate is allowed), up to the number of events its log holds.
    async fn check_order(&self, fleet: &TestFleet) -> Order {
        let expected = outbox_counts(fleet).await;
        let url = fleet.broker.node_urls()[0].to_owned();
        let conn = Connection::connect(&url, ConnectionProperties::default())
            .await
            .expect("a node");
        let channel = conn.create_channel().await.unwrap();
        let mut highest: BTreeMap<String, i64> = BTreeMap::new();
        let mut order = Order::default();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = channel
                .basic_get(self.name.as_str().into(), BasicGetOptions { no_ack: true })
                .await
                .unwrap();
            let Some(message) = got else {
                let complete = expected
                    .iter()
                    .all(|(op, n)| highest.get(op).copied().unwrap_or(0) >= *n);
                if complete || Instant::now() > deadline {
                    break;
                }
                sleep(Duration::from_millis(200)).await;
                continue;
            };
            let event: Value = serde_json::from_slice(&message.delivery.data).unwrap();
            order.events += 1;
            let op = event["subject"].as_str().unwrap_or_default().to_owned();
            let sequence = event["data"]["sequence"].as_i64().unwrap_or(0);
            let seen = highest.entry(op).or_insert(0);
            if sequence == *seen + 1 {
                *seen = sequence;
            } else if sequence > *seen {
                order.out_of_order += 1;
                *seen = sequence;
            }
        }
        order.gaps = expected
            .iter()
            .filter(|(op, n)| highest.get(*op).copied().unwrap_or(0) < **n)
            .count();
        let _ = conn.close(200, "OK".into()).await;
        order
    }
}

/// How many events each operation's log numbered.
async fn outbox_counts(fleet: &TestFleet) -> BTreeMap<String, i64> {
    let client = fleet.store.pooled_session().await.unwrap();
    client
        .query(
            "SELECT operation_id, count(*) FROM operation_outbox GROUP BY operation_id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}
