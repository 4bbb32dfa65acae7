//! Postgres failover under load: a fleet of real processes (two replicas each of prepare,
//! execute, reconcile, the relay and the API) on a primary with a synchronous standby of its own
//! ([`PgPair`]), every process given both servers in one URL with
//! `target_session_attrs=read-write`. While intents are submitted (over the API and the
//! queue) and approved over the API, and payments are in flight at the simulator, the
//! primary is SIGKILLed and the standby promoted. No worker is restarted. Then:
//!
//! - nothing acknowledged is lost: every intent the API answered 202 (or the broker
//!   confirmed) is stored, every approval answered 200 is recorded;
//! - the promise holds ([`check_promise`]): at most one provider effect per operation,
//!   every final state what the simulator did, no blind retry, no drift, every history a
//!   chain of moves under growing fences (a worker acting on a lease it could no longer
//!   prove would break one of these), and every operation final or escalated;
//! - the fleet resumed by itself: the time from the kill to the API's first answered write
//!   and to the first operation reaching a final state is printed with the figures, in one
//!   line (`FAILOVER_OPS` sets the number of operations, `FAILOVER_PROMOTE_AFTER_MS` the
//!   time between the kill and the promotion, 2 s by default).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleet_broker::{Publisher, Queue};
use fleet_core::{ApprovalStatus, Role};
use fleet_provider_sim::SimConfig;
use fleet_tests::{
    alone, at, check_promise, eventually_within, hash_of, intent, intent_bytes, op_of, EventOrder,
    Infra, PgPair, TappedEvent, TestFleet, WorkerProcess, TENANT, TWO_OF_EACH_WORKER,
};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::time::{sleep, Instant};

/// Short leases and fast sweeps, so that the calls cut off by the failover are settled
/// within the test's budget. Some payments take 300 ms at the simulator and some 1.5 s
/// (delay faults below), so that calls are in flight when the primary dies, and some
/// outlast what their lease can be trusted for without a renewal.
const WORKER_ENV: [(&str, &str); 12] = [
    ("LEASE_TTL_MS", "1000"),
    ("PAYMENTS_TIMEOUT_MS", "3000"),
    ("PAYMENTS_SEARCH_LAG_MS", "500"),
    ("PAYMENTS_MAX_REQUEST_S", "2"),
    ("SWEEP_INTERVAL_MS", "200"),
    ("LOOKUP_RECHECK_MS", "300"),
    ("UNSTARTED_REDRIVE_MS", "1000"),
    ("ESCALATE_AFTER_LOOKUPS", "20"),
    ("RELAY_POLL_INTERVAL_MS", "100"),
    ("API_RATE_PER_S", "1000"),
    ("API_RATE_BURST", "1000"),
    ("RUST_LOG", "info"),
];

/// How long one intent's submission and approval keep being retried through the outage.
const CLIENT_DEADLINE: Duration = Duration::from_secs(60);
/// A client's pause between two tries of a request the fleet could not answer.
const CLIENT_RETRY: Duration = Duration::from_millis(100);
/// The pace of new intents.
const PACE: Duration = Duration::from_millis(40);

/// What a client of the fleet does: submit and approve, retrying what was not answered.
#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    /// The API replicas, taken in turn by every try (a load balancer's round robin).
    apis: Vec<String>,
    next_api: Arc<std::sync::atomic::AtomicUsize>,
    agent: String,
    approver: String,
    publisher: Publisher,
    /// Every write sent to the API: (sent, answered, acknowledged).
    writes: Arc<Mutex<Vec<(Instant, Instant, bool)>>>,
}

/// What the fleet acknowledged for one intent.
#[derive(Debug)]
struct Acked {
    op: String,
    hash: String,
    submitted: bool,
    approved: bool,
}

impl Client {
    /// POSTs `body` to the API as `token`: whether it answered one of `ok`.
    async fn write(&self, token: &str, path: &str, body: Vec<u8>, ok: &[StatusCode]) -> bool {
        let sent = Instant::now();
        let turn = self
            .next_api
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let api = &self.apis[turn % self.apis.len()];
        let answer = self
            .http
            .post(format!("{api}{path}"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body)
            .timeout(Duration::from_secs(15))
            .send()
            .await;
        let acked = answer.is_ok_and(|a| ok.contains(&a.status()));
        self.writes
            .lock()
            .unwrap()
            .push((sent, Instant::now(), acked));
        acked
    }

    /// Submits `intent` (over the queue or the API) and approves it, each retried until
    /// acknowledged or [`CLIENT_DEADLINE`].
    async fn drive(self, intent: Value, over_queue: bool) -> Acked {
        let (op, hash) = (op_of(&intent), hash_of(&intent));
        let deadline = Instant::now() + CLIENT_DEADLINE;
        let mut submitted = false;
        while !submitted && Instant::now() < deadline {
            submitted = if over_queue {
                self.publisher
                    .publish(Queue::IntentsPrepare, &intent_bytes(&intent))
                    .await
                    .is_ok()
            } else {
                let ok = [StatusCode::ACCEPTED, StatusCode::OK];
                self.write(&self.agent, "/v1/intents", intent_bytes(&intent), &ok)
                    .await
            };
            if !submitted {
                sleep(CLIENT_RETRY).await;
            }
        }
        let mut approved = false;
        let body = serde_json::to_vec(&json!({ "payload_hash": hash })).unwrap();
        while submitted && !approved && Instant::now() < deadline {
            // 404 until prepare stored an intent that came over the queue.
            let path = format!("/v1/operations/{op}/approve");
            approved = self
                .write(&self.approver, &path, body.clone(), &[StatusCode::OK])
                .await;
            if !approved {
                sleep(CLIENT_RETRY).await;
            }
        }
        Acked {
            op,
            hash,
            submitted,
            approved,
        }
    }
}

/// A connection to the fleet's database (whichever server takes writes), or `None` while
/// there is none: the harness's own helpers expect a database that answers.
async fn connected(fleet: &TestFleet) -> Option<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(&fleet.database_url, tokio_postgres::NoTls)
        .await
        .ok()?;
    tokio::spawn(connection);
    Some(client)
}

/// A count over the fleet's database, or `None` while it cannot be read (the failover).
async fn count(fleet: &TestFleet, sql: &str) -> Option<i64> {
    connected(fleet)
        .await?
        .query_one(sql, &[])
        .await
        .ok()?
        .try_get(0)
        .ok()
}

const OPEN: &str = "SELECT count(*) FROM operations WHERE status NOT IN ('succeeded','failed','cancelled','disputed') AND escalated_at IS NULL";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_rides_out_a_primary_failover_losing_and_repeating_nothing() {
    // Two Postgres servers and ten worker processes under load keep both cores busy.
    let _alone = alone().await;
    let n_ops: usize = std::env::var("FAILOVER_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let promote_after = Duration::from_millis(
        std::env::var("FAILOVER_PROMOTE_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000),
    );
    let mut pair = PgPair::start().await;
    let fleet = TestFleet::start_on(
        pair.infra(Infra::shared().amqp_url),
        SimConfig {
            search_lag_ms: 200,
            ..Default::default()
        },
    )
    .await;
    for (delay_ms, probability) in [(300, 0.4), (1_500, 0.2)] {
        fleet
            .sim_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": delay_ms, "probability": probability}))
            .await;
    }
    let workers: Vec<WorkerProcess> = TWO_OF_EACH_WORKER
        .into_iter()
        .map(|name| fleet.spawn_process(name, &WORKER_ENV))
        .collect();
    // Every outcome event of the run, as an agent subscribed throughout receives them.
    let tap = fleet.tap_events("#").await;
    let mut apis = vec![
        fleet.spawn_api(&WORKER_ENV).await,
        fleet.spawn_api(&WORKER_ENV).await,
    ];
    let client = Client {
        http: reqwest::Client::new(),
        apis: apis.iter().map(|a| a.base_url.clone()).collect(),
        next_api: Arc::default(),
        agent: fleet.token("billing-bot", Role::Agent, &[TENANT]).await,
        approver: fleet.token("alice", Role::Approver, &[TENANT]).await,
        publisher: fleet.publisher.clone(),
        writes: Arc::default(),
    };

    // The load: a new intent every PACE, one in three over the queue, each driven on its
    // own task until it is acknowledged and approved.
    let load = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut driven = Vec::with_capacity(n_ops);
            for n in 0..n_ops {
                driven.push(tokio::spawn(client.clone().drive(intent(), n % 3 == 2)));
                sleep(PACE).await;
            }
            let mut acked = Vec::with_capacity(n_ops);
            for d in driven {
                acked.push(d.await.expect("a client task"));
            }
            acked
        })
    };

    // Mid-load: a quarter of the payments done and some in flight.
    eventually_within(
        Duration::from_secs(60),
        "payments done and in flight",
        || async {
            let done = count(
                &fleet,
                "SELECT count(*) FROM operations WHERE status = 'succeeded'",
            )
            .await?;
            let in_flight = count(
                &fleet,
                "SELECT count(*) FROM operations WHERE status = 'in_progress'",
            )
            .await?;
            (done >= (n_ops / 4) as i64 && in_flight > 0).then_some(())
        },
    )
    .await;
    let killed_at = pair.kill_primary();
    // Every process of the old primary is gone by now, so whatever the history holds from
    // a transaction that started later was written on the promoted standby. The servers
    // run on this machine: the database's clock is this one.
    let killed_clock = Utc::now();
    let kill_took = killed_at.elapsed().as_secs_f64();
    // A failover manager takes a moment to decide the primary is gone: the fleet spends
    // it with no writable server (the standby refusing read-write sessions), longer than
    // a lease can be trusted without a renewal.
    sleep(promote_after).await;
    pair.promote_standby().await;
    let promoted_s = killed_at.elapsed().as_secs_f64();

    // The first operation to reach a final state after the kill: its transaction's start.
    let first_final: DateTime<Utc> = eventually_within(
        Duration::from_secs(60),
        "an operation to reach a final state after the failover",
        || async {
            connected(&fleet)
                .await?
                .query_one(
                    "SELECT min(at) FROM operation_events
                      WHERE kind = 'transition' AND to_status IN ('succeeded','failed','cancelled')
                        AND at > $1",
                    &[&killed_clock],
                )
                .await
                .ok()?
                .get::<_, Option<DateTime<Utc>>>(0)
        },
    )
    .await;
    // From the kill's start, as the API's figure.
    let ops_resume_s = kill_took + (first_final - killed_clock).as_seconds_f64();

    let acked = load.await.expect("the load");
    let api_resume_s = client
        .writes
        .lock()
        .unwrap()
        .iter()
        .filter(|(sent, _, ok)| *ok && *sent >= killed_at)
        .map(|(_, answered, _)| answered.duration_since(killed_at).as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    let refused_writes = client
        .writes
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, ok)| !ok)
        .count();

    eventually_within(
        Duration::from_secs(60),
        "every operation final or escalated",
        || async { (count(&fleet, OPEN).await? == 0).then_some(()) },
    )
    .await;

    let unacknowledged: Vec<&Acked> = acked
        .iter()
        .filter(|a| !a.submitted || !a.approved)
        .collect();
    assert!(
        unacknowledged.is_empty(),
        "the fleet never acknowledged {} of {n_ops} intents or approvals after the failover: {unacknowledged:?}",
        unacknowledged.len()
    );
    let ops: Vec<(String, String)> = acked
        .iter()
        .map(|a| (a.op.clone(), a.hash.clone()))
        .collect();
    let report = check_promise(&fleet, &ops).await;
    let mut approvals_lost = 0;
    for a in &acked {
        let row = fleet.store.get(at(&a.op)).await.unwrap();
        let recorded = fleet
            .sql()
            .await
            .query_one(
                "SELECT count(*) FROM approvals WHERE operation_id = $1 AND tenant_id = $2",
                &[&a.op, &TENANT],
            )
            .await
            .unwrap()
            .get::<_, i64>(0);
        if recorded == 0 || row.is_none_or(|r| r.approval_status != ApprovalStatus::Approved) {
            approvals_lost += 1;
        }
    }
    let logged = fleet.logged_event_counts().await;
    let received = eventually_within(
        Duration::from_secs(30),
        "every operation's last event",
        || async {
            let received: Vec<(String, i64)> =
                tap.events().iter().map(TappedEvent::sequenced).collect();
            EventOrder::complete(&received, &logged).then_some(received)
        },
    )
    .await;
    let order = EventOrder::of(&received, &logged);
    let mut workers = workers;
    for w in workers
        .iter_mut()
        .chain(apis.iter_mut().map(|a| &mut a.process))
    {
        assert!(
            w.exited().is_none(),
            "{} exited during the failover:\n{}",
            w.name,
            w.log_text()
        );
    }
    let abandoned_calls: usize = workers
        .iter()
        .map(|w| {
            w.log_text()
                .matches("lease lost during the provider call")
                .count()
        })
        .sum();
    println!(
        "pg_failover: operations={n_ops} final={:?} escalated={} lost={} missing={} approvals_lost={approvals_lost} duplicates={} mismatched={} blind_retries={} drift={} broken_histories={} abandoned_calls={abandoned_calls} refused_writes={refused_writes} promote_after_s={:.1} promoted_s={promoted_s:.2} api_resume_s={api_resume_s:.2} ops_resume_s={ops_resume_s:.2} events={} out_of_order={} gaps={}",
        report.by_status,
        report.escalated,
        report.lost,
        report.missing,
        report.duplicates,
        report.mismatched,
        report.blind_retries,
        report.drift,
        report.broken_histories,
        promote_after.as_secs_f64(),
        order.events,
        order.out_of_order,
        order.gaps,
    );
    report.assert_kept("after the failover");
    assert_eq!(approvals_lost, 0, "approvals answered 200 and not recorded");
    assert_eq!(
        order.out_of_order, 0,
        "events arrive in order per operation"
    );
    assert!(
        api_resume_s.is_finite(),
        "no API write was answered after the kill"
    );

    drop(workers);
    drop(apis);
    fleet.stop().await;
    drop(pair);
}
