//! Postgres failover under load: a fleet of real processes (two replicas each of prepare,
//! execute, reconcile, the relay and the API) on a primary with a synchronous standby of its own
//! ([`PgPair`]), every process given both servers in one URL with
//! `target_session_attrs=read-write`. While intents are submitted (over the API and the
//! queue), approved over the API, and waited for by their agents (`wait_for=final`), and
//! payments are in flight at the simulator, the primary fails ([`PgFault`]: SIGKILLed,
//! frozen with SIGSTOP, or black-holed behind the test's proxy) and the standby is
//! promoted. One API replica is SIGKILLed with the primary and started again at once (it
//! comes up without a database), the other a second after the promotion; no other process
//! is restarted. Then:
//!
//! - nothing acknowledged is lost: every intent the API answered 202 (or the broker
//!   confirmed) is stored, every approval answered 200 is recorded, once (from the rows);
//! - every agent's wait ended with the final state the row holds;
//! - the promise holds ([`check_promise`]): at most one provider effect per operation,
//!   every final state what the simulator did, no blind retry, no drift, every history a
//!   chain of moves under growing fences (a worker acting on a lease it could no longer
//!   prove would break one of these), and every operation final or escalated;
//! - the fleet resumed by itself, the old primary still frozen or silent: every process is
//!   ready again within 30 s of the promotion; the time from the failure to the API's
//!   first answered write, to the first operation reaching a final state, and to the last
//!   process being ready is printed with the figures, in one line (`FAILOVER_OPS` sets the
//!   number of operations, `FAILOVER_PROMOTE_AFTER_MS` the time between the failure and
//!   the promotion, 2 s by default).

use std::time::Duration;

use chrono::{DateTime, Utc};
use fleet_broker::Queue;
use fleet_provider_sim::SimConfig;
use fleet_tests::{
    admin_url_of, alone, approvals_from_rows, check_promise, eventually_within, intent,
    intent_bytes, ApiReplicas, Driven, EventOrder, Infra, PgFault, PgPair, RetryingClient,
    TappedEvent, TestFleet, WorkerProcess, TWO_OF_EACH_WORKER,
};
use serde_json::json;
use tokio::time::{sleep, Instant};

/// Short leases and fast sweeps, so that the calls cut off by the failover are settled
/// within the test's budget. Some payments take 300 ms at the simulator and some 1.5 s
/// (delay faults below), so that calls are in flight when the primary fails, and some
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
const CLIENT_DEADLINE: Duration = Duration::from_secs(90);
/// The pace of new intents.
const PACE: Duration = Duration::from_millis(40);
/// What the fleet promises after a promotion: every process working again within this.
const RESUME_BOUND: Duration = Duration::from_secs(30);

/// A count over the fleet's database through the harness's own pool (which finds the
/// server that takes writes as the fleet's do), or `None` while it cannot be read: the
/// failover, and a frozen or silent primary the pool has not given up on yet.
async fn count(fleet: &TestFleet, sql: &str) -> Option<i64> {
    let read = async {
        let client = fleet.store.pooled_session().await.ok()?;
        client.query_one(sql, &[]).await.ok()?.try_get(0).ok()
    };
    tokio::time::timeout(Duration::from_secs(3), read)
        .await
        .ok()
        .flatten()
}

const OPEN: &str = "SELECT count(*) FROM operations WHERE status NOT IN ('succeeded','failed','cancelled','disputed') AND escalated_at IS NULL";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_rides_out_a_primary_failover_losing_and_repeating_nothing() {
    failover_under(PgFault::Killed, 120).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_rides_out_a_frozen_primary_losing_and_repeating_nothing() {
    failover_under(PgFault::Frozen, 60).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_rides_out_a_black_holed_primary_losing_and_repeating_nothing() {
    failover_under(PgFault::BlackHoled, 60).await;
}

async fn failover_under(fault: PgFault, default_ops: usize) {
    // Two Postgres servers and ten worker processes under load keep both cores busy.
    let _alone = alone().await;
    let n_ops: usize = std::env::var("FAILOVER_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_ops);
    let promote_after = Duration::from_millis(
        std::env::var("FAILOVER_PROMOTE_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000),
    );
    let mut pair = PgPair::start_for(fault).await;
    let fleet = TestFleet::start_on(
        pair.infra(Infra::shared().amqp_url),
        SimConfig {
            search_lag_ms: 200,
            ..Default::default()
        },
    )
    .await;
    // Ends a frozen or silent primary before the fleet's own clean-up, on every path: the
    // clean-up, like every client, would otherwise wait on it.
    let _fence = pair.fencer();
    for (delay_ms, probability) in [(300, 0.4), (1_500, 0.2)] {
        fleet
            .sim_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": delay_ms, "probability": probability}))
            .await;
    }
    let mut workers: Vec<WorkerProcess> = TWO_OF_EACH_WORKER
        .into_iter()
        .map(|name| fleet.spawn_process(name, &WORKER_ENV))
        .collect();
    // Every outcome event of the run, as an agent subscribed throughout receives them.
    let tap = fleet.tap_events("#").await;
    let mut apis = ApiReplicas::start(&fleet, 2, &WORKER_ENV).await;
    let client = RetryingClient::new(&fleet, &apis, CLIENT_DEADLINE).await;

    // The load: a new intent every PACE, one in three over the queue, each driven on its
    // own task until it is acknowledged, approved and waited for until final.
    let load = {
        let (client, publisher) = (client.clone(), fleet.publisher.clone());
        tokio::spawn(async move {
            let mut driven = Vec::with_capacity(n_ops);
            for n in 0..n_ops {
                let publisher = publisher.clone();
                let over_queue = (n % 3 == 2).then_some(move |intent, until| async move {
                    while Instant::now() < until {
                        let bytes = intent_bytes(&intent);
                        if publisher
                            .publish(Queue::IntentsPrepare, &bytes)
                            .await
                            .is_ok()
                        {
                            return true;
                        }
                        sleep(Duration::from_millis(100)).await;
                    }
                    false
                });
                driven.push(tokio::spawn(client.clone().drive(intent(), over_queue)));
                sleep(PACE).await;
            }
            let mut all = Vec::with_capacity(n_ops);
            for d in driven {
                all.push(d.await.expect("a client task"));
            }
            all
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
    let failed_at = pair.fail_primary(fault);
    // Nothing commits on the old primary after this (killed or frozen: no process runs;
    // black-holed: no request reaches it), so whatever the history holds from a
    // transaction that started later was written on the promoted standby. The servers run
    // on this machine: the database's clock is this one.
    let failed_clock = Utc::now();
    let fail_took = failed_at.elapsed().as_secs_f64();
    // An API replica dies with the primary and is started again at once: it comes up with
    // no server taking writes.
    apis.kill_and_respawn(&fleet, 0);
    // A failover manager takes a moment to decide the primary is gone: the fleet spends
    // it with no writable server (the standby refusing read-write sessions), longer than
    // a lease can be trusted without a renewal.
    sleep(promote_after).await;
    pair.promote_standby().await;
    let promoted_s = failed_at.elapsed().as_secs_f64();
    let promoted = Instant::now();
    // The other replica a second later, while the fleet reconnects.
    sleep(Duration::from_secs(1)).await;
    apis.kill_and_respawn(&fleet, 1);

    // Every process ready again (its own pool answering), the old primary still frozen or
    // silent: the last one's time from the promotion.
    let mut admins = Vec::new();
    for w in workers.iter().chain(apis.apis.iter().map(|a| &a.process)) {
        admins.push((w.name.clone(), admin_url_of(w).await));
    }
    let mut last_ready = Duration::ZERO;
    for (name, admin) in &admins {
        let ready = eventually_within(
            RESUME_BOUND,
            &format!("{name} ready again after the promotion"),
            || async {
                let answer = fleet
                    .http
                    .get(format!("{admin}/readyz"))
                    .send()
                    .await
                    .ok()?;
                answer.status().is_success().then(|| promoted.elapsed())
            },
        )
        .await;
        last_ready = last_ready.max(ready);
    }

    // The first operation to reach a final state after the failure: its transaction's start.
    let first_final: DateTime<Utc> = eventually_within(
        RESUME_BOUND,
        "an operation to reach a final state after the failover",
        || async {
            let read = async {
                fleet
                    .store
                    .pooled_session()
                    .await
                    .ok()?
                    .query_one(
                        "SELECT min(at) FROM operation_events
                          WHERE kind = 'transition' AND to_status IN ('succeeded','failed','cancelled')
                            AND at > $1",
                        &[&failed_clock],
                    )
                    .await
                    .ok()?
                    .get::<_, Option<DateTime<Utc>>>(0)
            };
            tokio::time::timeout(Duration::from_secs(3), read).await.ok().flatten()
        },
    )
    .await;
    // From the failure's start, as the API's figure.
    let ops_resume_s = fail_took + (first_final - failed_clock).as_seconds_f64();

    let driven: Vec<Driven> = load.await.expect("the load");
    eventually_within(
        Duration::from_secs(60),
        "every operation final or escalated",
        || async { (count(&fleet, OPEN).await? == 0).then_some(()) },
    )
    .await;
    // Everything above ran with the old primary as the fault left it. From here on the
    // harness's own tools (one-server clients among them) need it gone, as a failover
    // manager's fencing leaves it.
    pair.fence_primary();

    let writes = client.writes.lock().unwrap().clone();
    let api_resume_s = writes
        .iter()
        .filter(|(sent, _, ok)| *ok && *sent >= failed_at)
        .map(|(_, answered, _)| answered.duration_since(failed_at).as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    let refused_writes = writes.iter().filter(|(_, _, ok)| !ok).count();

    let unacknowledged: Vec<&Driven> = driven
        .iter()
        .filter(|d| !d.submitted || !d.approved)
        .collect();
    assert!(
        unacknowledged.is_empty(),
        "the fleet never acknowledged {} of {n_ops} intents or approvals after the failover: {unacknowledged:?}",
        unacknowledged.len()
    );
    let ops: Vec<(String, String)> = driven
        .iter()
        .map(|d| (d.op.clone(), d.hash.clone()))
        .collect();
    let report = check_promise(&fleet, &ops).await;
    let (approvals_lost, approvals_twice) = approvals_from_rows(&fleet, &driven).await;
    // Every agent's wait answered the state the row ends in.
    let mut wrong_answers = Vec::new();
    for d in &driven {
        let row = fleet.row(&d.op).await;
        let stored = row.status.as_str();
        if d.final_status.as_deref() != Some(stored) && row.escalated_at.is_none() {
            wrong_answers.push((d.op.clone(), d.final_status.clone(), stored));
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
    for w in workers.iter_mut() {
        assert!(
            w.exited().is_none(),
            "{} exited during the failover:\n{}",
            w.name,
            w.log_text()
        );
    }
    apis.all_running();
    let abandoned_calls: usize = workers
        .iter()
        .map(|w| {
            w.log_text()
                .matches("lease lost during the provider call")
                .count()
        })
        .sum();
    println!(
        "pg_failover: fault={fault:?} operations={n_ops} final={:?} escalated={} lost={} missing={} approvals_lost={approvals_lost} approvals_twice={approvals_twice} wrong_answers={} duplicates={} mismatched={} blind_retries={} drift={} broken_histories={} abandoned_calls={abandoned_calls} api_restarts={} refused_writes={refused_writes} promote_after_s={:.1} promoted_s={promoted_s:.2} api_resume_s={api_resume_s:.2} ops_resume_s={ops_resume_s:.2} all_ready_after_promotion_s={:.2} events={} out_of_order={} gaps={}",
        report.by_status,
        report.escalated,
        report.lost,
        report.missing,
        wrong_answers.len(),
        report.duplicates,
        report.mismatched,
        report.blind_retries,
        report.drift,
        report.broken_histories,
        apis.restarts,
        promote_after.as_secs_f64(),
        last_ready.as_secs_f64(),
        order.events,
        order.out_of_order,
        order.gaps,
    );
    report.assert_kept("after the failover");
    assert_eq!(approvals_lost, 0, "approvals answered 200 and not recorded");
    assert_eq!(approvals_twice, 0, "approvals recorded twice");
    assert!(
        wrong_answers.is_empty(),
        "agents' waits that did not answer the final state: {wrong_answers:?}"
    );
    assert_eq!(
        order.out_of_order, 0,
        "events arrive in order per operation"
    );
    assert!(
        api_resume_s.is_finite(),
        "no API write was answered after the failure"
    );
    assert!(
        api_resume_s.max(ops_resume_s) < promoted_s + RESUME_BOUND.as_secs_f64(),
        "the fleet resumed more than {RESUME_BOUND:?} after the promotion"
    );

    drop(workers);
    drop(apis);
    fleet.stop().await;
    drop(pair);
}
