//! A rate-limited provider (docs/design.md#provider-rates): the simulator admits 40
//! requests a second to the payments API and answers `429` with `Retry-After: 1` above
//! it. Two real fleet-execute processes with `PAYMENTS_RATE_PER_S=40` take their slots
//! from the schedule they share in Postgres: every payment goes through once, almost no
//! request is refused, and no 429 releases a claim (no `requeued` history row). With a
//! rate set above the provider's, the 429s that follow pause and slow the schedule, and
//! still no claim is released. The schedule's SQL and its grants are checked on their own.
//!
//! Timing-sensitive (the shared schedule is against the wall clock), so it runs alone;
//! speed itself is the benchmark's to report (`fleet-bench --provider-rate 40`), not
//! asserted here.

use std::collections::HashMap;
use std::time::Duration;

use fleet_core::throttle::BACKOFF;
use fleet_core::Status;
use fleet_execute::ExecuteSettings;
use fleet_store::{DbRole, RolePrefix};
use fleet_tests::{alone, at, eventually, hash_of, intent, op_of, TestFleet};
use serde_json::{json, Value};
use tokio::time::Instant;

/// The provider's limit, and what the simulator answers above it.
const LIMIT: u32 = 40;

/// `n` payments, prepared and approved while the provider is not yet limited (intake
/// looks the payee up at the provider too, and prepare takes no slot), their doorbells
/// waiting for the execute workers that are not started yet.
async fn approved_payments(fleet: &mut TestFleet, n: usize) -> Vec<String> {
    fleet.spawn_prepare();
    let intents: Vec<Value> = (0..n).map(|_| intent()).collect();
    for i in &intents {
        fleet.submit(i).await;
    }
    for i in &intents {
        fleet.prepared(&op_of(i)).await;
        assert!(fleet.approve(&op_of(i), &hash_of(i)).await.unwrap());
    }
    intents.iter().map(op_of).collect()
}

/// What the simulator saw: the 429s, and per reference the payments it created.
struct Seen {
    refused: usize,
    created: HashMap<String, usize>,
}

async fn seen(fleet: &TestFleet) -> Seen {
    let mut seen = Seen {
        refused: 0,
        created: HashMap::new(),
    };
    for r in fleet.sim_requests(None).await {
        if r["status"] == 429 {
            seen.refused += 1;
        } else if r["method"] == "POST" && r["status"] == 201 && r["replayed"] == false {
            *seen
                .created
                .entry(r["reference"].as_str().unwrap_or_default().to_owned())
                .or_default() += 1;
        }
    }
    seen
}

/// Runs `ops` through two execute processes paced at `fleet_rate` against the provider's
/// [`LIMIT`], and checks the promise: each succeeded with exactly one payment, and no
/// claim was released (a 429 never became a `requeued` move). The 429s and the elapsed
/// time, for the caller to judge and print.
async fn run_paced(fleet: &TestFleet, ops: &[String], fleet_rate: &str) -> (usize, Duration) {
    fleet
        .sim_post("/_sim/rate_limit", json!({"per_second": LIMIT}))
        .await;
    let env = [("PAYMENTS_RATE_PER_S", fleet_rate), ("RUST_LOG", "warn")];
    let started = Instant::now();
    let _executes = [
        fleet.spawn_process("fleet-execute", &env),
        fleet.spawn_process("fleet-execute", &env),
    ];
    fleet.all_succeed(ops.len(), Duration::from_secs(120)).await;
    let elapsed = started.elapsed();

    let seen = seen(fleet).await;
    for op in ops {
        let reference = fleet.reference_of(op).await;
        assert_eq!(
            seen.created.get(&reference).copied(),
            Some(1),
            "{op}: exactly one payment"
        );
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM operation_events WHERE kind = 'transition' AND to_status = 'not_started'").await,
        0,
        "no claim was released (requeued)"
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM attempts").await,
        ops.len() as i64,
        "one claim, one attempt, per payment"
    );
    (seen.refused, elapsed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_executes_share_the_providers_rate_and_a_429_never_releases_a_claim() {
    let _alone = alone().await;
    let mut fleet = TestFleet::start().await;
    let ops = approved_payments(&mut fleet, 400).await;

    let (refused, elapsed) = run_paced(&fleet, &ops, &LIMIT.to_string()).await;
    let ideal = ops.len() as f64 / f64::from(LIMIT);
    println!(
        "provider_rate: {} payments at {LIMIT}/s, two executes: {:.2} s against an ideal {ideal:.2} s ({:.2}×), {refused} refused ({:.3} per operation)",
        ops.len(),
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() / ideal,
        refused as f64 / ops.len() as f64
    );
    assert!(
        (refused as f64) < 0.1 * ops.len() as f64,
        "{refused} requests refused for {} operations",
        ops.len()
    );
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_set_above_the_providers_is_backed_off_without_releasing_claims() {
    let _alone = alone().await;
    let mut fleet = TestFleet::start().await;
    let ops = approved_payments(&mut fleet, 200).await;

    // Twice what the provider allows: its 429s pause the schedule for every replica and
    // halve its rate, which then grows back.
    let (refused, elapsed) = run_paced(&fleet, &ops, &(2 * LIMIT).to_string()).await;
    println!(
        "provider_rate: {} payments at {LIMIT}/s with executes set to {}/s: {:.2} s, {refused} refused ({:.3} per operation)",
        ops.len(),
        2 * LIMIT,
        elapsed.as_secs_f64(),
        refused as f64 / ops.len() as f64
    );
    let factor = fleet
        .count("SELECT (factor * 1000)::bigint FROM provider_rates WHERE provider = 'payments'")
        .await;
    assert!(factor < 1000, "the 429s lowered the shared factor");
    assert!(
        (refused as f64) < 0.5 * ops.len() as f64,
        "{refused} requests refused for {} operations",
        ops.len()
    );
    fleet.stop().await;
}

#[tokio::test]
async fn the_schedule_spaces_slots_pauses_for_a_429_and_lowers_its_factor_once_per_pause() {
    let fleet = TestFleet::start().await;
    let store = &fleet.store;
    let close = |a: Duration, b_ms: f64| (a.as_secs_f64() * 1000.0 - b_ms).abs() < 20.0;

    // 10/s: slots 100 ms apart, the first at once.
    let first = store
        .reserve_provider_slots("payments", 10.0, 3)
        .await
        .unwrap();
    assert!(close(first.waits[0], 0.0), "{first:?}");
    let gaps: Vec<f64> = first
        .waits
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0)
        .collect();
    assert!(gaps.iter().all(|g| (g - 100.0).abs() < 0.01), "{gaps:?}");
    assert_eq!(first.paused, Duration::ZERO);
    // The next reservation continues the schedule; another provider has its own.
    let next = store
        .reserve_provider_slots("payments", 10.0, 1)
        .await
        .unwrap();
    assert!(next.waits[0] > first.waits[2], "{next:?}");
    let crm = store.reserve_provider_slots("crm", 10.0, 1).await.unwrap();
    assert!(close(crm.waits[0], 0.0), "{crm:?}");

    // A 429 asking for 2 s: every next slot comes after it, at half the rate.
    store
        .provider_throttled("payments", Duration::from_secs(2))
        .await
        .unwrap();
    let paused = store
        .reserve_provider_slots("payments", 10.0, 2)
        .await
        .unwrap();
    assert!(close(paused.paused, 2000.0), "{paused:?}");
    assert!(close(paused.waits[0], 2000.0), "{paused:?}");
    let gap = (paused.waits[1] - paused.waits[0]).as_secs_f64() * 1000.0;
    assert!((gap - 200.0).abs() < 5.0, "half the rate: {gap} ms apart");
    // Another 429 during the pause (sent before it) lowers nothing more.
    store
        .provider_throttled("payments", Duration::from_secs(1))
        .await
        .unwrap();
    let factor = fleet
        .count("SELECT (factor * 1000)::bigint FROM provider_rates WHERE provider = 'payments'")
        .await;
    assert_eq!(factor, (BACKOFF.lowered(1.0) * 1000.0) as i64);

    // What a component may ask for is bounded.
    assert!(store
        .reserve_provider_slots("payments", 0.0, 1)
        .await
        .is_err());
    assert!(store
        .reserve_provider_slots("payments", 10.0, 0)
        .await
        .is_err());
    assert!(store
        .reserve_provider_slots("payments", 10.0, 5000)
        .await
        .is_err());
    fleet.stop().await;
}

#[tokio::test]
async fn the_intakes_lookups_wait_while_approved_calls_are_queued_and_go_at_once_otherwise() {
    let fleet = TestFleet::start().await;
    let store = &fleet.store;
    let horizon = fleet_store::INTAKE_HORIZON;
    // An idle provider serves a lookup at once, and its slot is in the schedule.
    let idle = store
        .reserve_intake_slots("crm", 10.0, 1, horizon)
        .await
        .unwrap();
    assert_eq!(idle.deferred, Duration::ZERO, "{idle:?}");
    assert!(idle.waits[0] < Duration::from_millis(20), "{idle:?}");
    let after = store.reserve_provider_slots("crm", 10.0, 1).await.unwrap();
    assert!(after.waits[0] >= Duration::from_millis(80), "{after:?}");

    // Two seconds of execute's calls queued: a lookup gets no slot, only how long until
    // the queue is down to the horizon, and takes nothing from the schedule.
    store
        .reserve_provider_slots("payments", 10.0, 20)
        .await
        .unwrap();
    let deferred = store
        .reserve_intake_slots("payments", 10.0, 1, horizon)
        .await
        .unwrap();
    assert!(deferred.waits.is_empty(), "{deferred:?}");
    let expected = Duration::from_secs(2) - horizon;
    assert!(
        deferred.deferred <= expected && deferred.deferred + Duration::from_millis(100) > expected,
        "{deferred:?}"
    );
    let next = store
        .reserve_provider_slots("payments", 10.0, 1)
        .await
        .unwrap();
    assert!(
        next.waits[0] < Duration::from_millis(2_020),
        "the deferred lookup took no slot: {next:?}"
    );

    // Bounds, as for every reservation.
    assert!(store
        .reserve_intake_slots("payments", 10.0, 1, Duration::from_secs(61))
        .await
        .is_err());
    assert!(store
        .reserve_intake_slots("payments", 10.0, 5000, horizon)
        .await
        .is_err());
    fleet.stop().await;
}

#[tokio::test]
async fn only_the_components_that_call_providers_may_use_the_schedule() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let prefix = RolePrefix::of(&fleet.database_url).unwrap();
    for role in DbRole::ALL {
        let login = role.login_name(&prefix);
        let row = sql
            .query_one(
                "SELECT has_function_privilege($1, 'fleet_reserve_provider_slots(text, double precision, integer, double precision)', 'EXECUTE'),
                        has_function_privilege($1, 'fleet_reserve_intake_slots(text, double precision, integer, double precision, double precision)', 'EXECUTE'),
                        has_function_privilege($1, 'fleet_provider_throttled(text, double precision, double precision, double precision, double precision)', 'EXECUTE'),
                        has_table_privilege($1, 'provider_rates', 'SELECT'),
                        has_table_privilege($1, 'provider_rates', 'INSERT, UPDATE, DELETE, TRUNCATE')",
                &[&login],
            )
            .await
            .unwrap();
        let calls_providers = matches!(role, DbRole::Execute | DbRole::Reconcile);
        // The intake's payee lookups take slots too, after approved operations' calls.
        let looks_up_payees = matches!(role, DbRole::Prepare | DbRole::Api);
        let any = calls_providers || looks_up_payees;
        let (reserve, reserve_intake, throttle, read, write): (bool, bool, bool, bool, bool) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        assert_eq!(
            (reserve, reserve_intake, throttle, read, write),
            (calls_providers, looks_up_payees, any, any, false),
            "{login}"
        );
    }
    fleet.stop().await;
}

/// A payment whose first send the provider refuses with 429 (no Retry-After: a second is
/// assumed), with execute in-process and no rate configured, under a lease of `ttl_ms`.
async fn throttled_once(ttl_ms: i64) -> (TestFleet, String) {
    let mut fleet = TestFleet::start().await;
    fleet
        .sim_fault(
            json!({"route": "POST /v1/payments", "kind": "error_before_commit", "status": 429}),
        )
        .await;
    fleet.spawn_prepare();
    fleet.spawn_execute_with(ExecuteSettings {
        lease_ttl_ms: ttl_ms,
        ..ExecuteSettings::default()
    });
    let op = fleet.submit_and_approve(&intent()).await;
    (fleet, op)
}

#[tokio::test]
async fn a_429_is_waited_out_and_sent_again_within_the_claim() {
    let (fleet, op) = throttled_once(30_000).await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.attempts, 1, "one claim");
    let sent: Vec<Value> = fleet.sim_requests(Some(&op)).await;
    assert_eq!(
        sent.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(),
        [json!(429), json!(201)],
        "the same request twice: refused, then created"
    );
    assert!(sent
        .iter()
        .all(|r| r["idempotency_key"] == sent[0]["idempotency_key"]));
    let events = fleet.store.events(at(&op)).await.unwrap();
    assert!(
        !events
            .iter()
            .any(|e| e.to_status == Some(fleet_core::Status::NotStarted)
                && e.kind == fleet_core::history::HistoryKind::Transition),
        "no claim released: {events:?}"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_429_that_would_outlast_the_leases_trust_releases_the_claim_as_before() {
    // A one-second lease is trusted for two thirds of a second: the second the 429 asks
    // for is too long to wait within the claim.
    let (fleet, op) = throttled_once(1_000).await;
    let attempt = fleet.first_attempt_finished(&op).await;
    assert_eq!(attempt.http_status, Some(429));
    let store = fleet.store.clone();
    eventually("the claim released back to not_started", || async {
        store.events(at(&op)).await.unwrap().into_iter().find(|e| {
            e.kind == fleet_core::history::HistoryKind::Transition
                && e.to_status == Some(fleet_core::Status::NotStarted)
        })
    })
    .await;
    assert_eq!(fleet.row(&op).await.status, Status::NotStarted);
    fleet.stop().await;
}
