//! A payee directory that gives no answer (429, 5xx) never refuses a valid intent, through
//! the real processes: fleet-prepare parks the message and stores the intent once the
//! directory answers (a parked intent survives a restart of prepare), and dead-letters it
//! `payee_directory_unreachable` only past `PREPARE_PAYEE_LOOKUP_DEADLINE_S`; fleet-api
//! answers 503 `payee_directory_unavailable` with `Retry-After` and stores nothing; only a
//! definite 404 is `payee_unknown`. Under a provider limited to 40 requests a second, the
//! intake's lookups and execute's payments share one schedule, and 600 payments go through
//! with almost no 429. `fleetctl approve` rides out the API's 429s.

use std::collections::HashMap;
use std::time::Duration;

use fleet_broker::Queue;
use fleet_core::Role;
use fleet_tests::{alone, eventually_within, hash_of, intent, op_of, TestFleet, WorkerProcess};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::time::Instant;

const TENANT: &str = "org_482";
const LOOKUP_ROUTE: &str = "GET /v1/beneficiaries/{id}";

/// fleet-prepare as a process, taking the harness's anonymous publishes, with `env` on top.
fn spawn_prepare(fleet: &TestFleet, env: &[(&str, &str)]) -> WorkerProcess {
    let mut all = vec![("PREPARE_ANONYMOUS_INTENTS", "allow")];
    all.extend_from_slice(env);
    fleet.spawn_process("fleet-prepare", &all)
}

/// The directory answers `status` to the next `times` lookups. The simulator logs creates,
/// not lookups: what is left of them ([`TestFleet::sim_faults_left`]) tells how many
/// lookups were made.
async fn directory_fails(fleet: &TestFleet, status: u16, times: u32) {
    fleet
        .sim_fault(json!({"route": LOOKUP_ROUTE, "kind": "error_before_commit",
                          "status": status, "times": times}))
        .await;
}

/// The operation of `intent` once prepare stored it, parked as it may be for the
/// directory meanwhile.
async fn stored_within_a_minute(fleet: &TestFleet, intent: &Value) -> fleet_store::OperationRow {
    let op = op_of(intent);
    eventually_within(Duration::from_secs(60), "the intent to be stored", || {
        let op = &op;
        async move { fleet.stored(op).await }
    })
    .await
}

#[tokio::test]
async fn a_directory_answering_503_for_a_while_then_200_stores_the_intent_from_the_queue() {
    let fleet = TestFleet::start().await;
    let _prepare = spawn_prepare(&fleet, &[]);
    // More failures than one intake's three tries: the message must be parked and come
    // back (before the fix, the third 503 made the payee unknown and refused it).
    directory_fails(&fleet, 503, 7).await;
    let i = intent();
    fleet.submit(&i).await;
    let row = stored_within_a_minute(&fleet, &i).await;
    assert_eq!(row.payee.expect("evidence")["status"], "found");
    assert_eq!(
        fleet.sim_faults_left().await,
        0,
        "every 503 was answered first"
    );
    assert!(fleet.dead_letters(Queue::IntentsPrepare).await.is_empty());
    fleet.stop().await;
}

#[tokio::test]
async fn a_parked_intent_does_not_hold_up_the_others_and_a_429_is_no_refusal_either() {
    let fleet = TestFleet::start().await;
    let _prepare = spawn_prepare(&fleet, &[("CONCURRENCY", "1")]);
    // The first intent's lookups meet 429s; the one behind it, sent after, is stored
    // while the first waits, parked.
    directory_fails(&fleet, 429, 3).await;
    let first = intent();
    fleet.submit(&first).await;
    eventually_within(Duration::from_secs(20), "three 429s answered", || async {
        (fleet.sim_faults_left().await == 0).then_some(())
    })
    .await;
    let second = intent();
    let op = fleet.submitted(&second).await;
    assert!(fleet.stored(&op).await.is_some());
    fleet.prepared(&op_of(&first)).await;
    assert!(fleet.dead_letters(Queue::IntentsPrepare).await.is_empty());
    fleet.stop().await;
}

#[tokio::test]
async fn an_intent_parked_for_the_directory_survives_a_restart_of_prepare() {
    let fleet = TestFleet::start().await;
    let mut prepare = spawn_prepare(&fleet, &[]);
    directory_fails(&fleet, 503, 100_000).await;
    let i = intent();
    fleet.submit(&i).await;
    // Its lookups have failed more than one intake's three tries: it is parked.
    eventually_within(
        Duration::from_secs(20),
        "the intent to be parked",
        || async { (100_000 - fleet.sim_faults_left().await >= 4).then_some(()) },
    )
    .await;
    prepare.kill9();
    fleet.clear_sim_faults().await;
    let _again = spawn_prepare(&fleet, &[]);
    stored_within_a_minute(&fleet, &i).await;
    assert!(fleet.dead_letters(Queue::IntentsPrepare).await.is_empty());
    fleet.stop().await;
}

#[tokio::test]
async fn a_definite_404_is_still_payee_unknown() {
    let fleet = TestFleet::start().await;
    let _prepare = spawn_prepare(&fleet, &[]);
    let mut i = intent();
    i["payload"]["beneficiary_id"] = json!("nobody_404");
    fleet.refused_at_intake(&i, "payee_unknown").await;
    fleet.stop().await;
}

#[tokio::test]
async fn past_the_deadline_the_intent_is_dead_lettered_payee_directory_unreachable() {
    let fleet = TestFleet::start().await;
    let prepare = spawn_prepare(&fleet, &[("PREPARE_PAYEE_LOOKUP_DEADLINE_S", "3")]);
    directory_fails(&fleet, 503, 100_000).await;
    let started = Instant::now();
    fleet
        .refused_at_intake(&intent(), "payee_directory_unreachable")
        .await;
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "refused after {:?}, before the deadline",
        started.elapsed()
    );
    // Parked, not spun: a handful of looks (three tries each) in the deadline.
    let tries = 100_000 - fleet.sim_faults_left().await;
    assert!((6..=30).contains(&tries), "{tries} lookups");
    // Counted, for the alert.
    let metrics = prepare_metrics(&fleet, &prepare).await;
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "fleet_intents_prepared_total{outcome=\"payee_directory_unreachable\"} 1"
        )),
        "{metrics}"
    );
    fleet.stop().await;
}

/// fleet-prepare's /metrics.
async fn prepare_metrics(fleet: &TestFleet, prepare: &WorkerProcess) -> String {
    let addr = prepare
        .log_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["message"] == "admin server listening")
        .and_then(|v| v["addr"].as_str().map(str::to_owned))
        .expect("prepare's admin address");
    fleet
        .http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_api_answers_503_with_retry_after_while_the_directory_is_down_and_stores_nothing() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    directory_fails(&fleet, 503, 100_000).await;
    let i = intent();
    let response = api.submit(&fleet.http, &agent, &i).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry_after = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(retry_after.parse::<u64>().unwrap() >= 1, "{retry_after}");
    let problem: Value = response.json().await.unwrap();
    assert_eq!(problem["code"], "payee_directory_unavailable", "{problem}");
    assert!(fleet.stored(&op_of(&i)).await.is_none(), "nothing stored");

    // The directory is back: the same intent is taken.
    fleet.clear_sim_faults().await;
    api.submitted(&fleet.http, &agent, &i).await;
    assert!(fleet.stored(&op_of(&i)).await.is_some());
    fleet.stop().await;
}

#[tokio::test]
async fn fleetctl_approve_rides_out_the_apis_429s() {
    let fleet = TestFleet::start().await;
    // One request a second per principal, no burst: a request right after another is 429.
    let api = fleet
        .spawn_api(&[("API_RATE_PER_S", "1"), ("API_RATE_BURST", "1")])
        .await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let i = intent();
    api.submitted(&fleet.http, &agent, &i).await;
    let op = op_of(&i);
    // Alice's bucket is spent just before her approve goes out.
    let (status, _) = api
        .get(&fleet.http, &alice, &format!("/v1/operations/{op}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let out = api
        .fleetctl_as(&alice, &[], &["approve", &op, "--hash", &hash_of(&i)])
        .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("approved"), "{stdout}");
    assert!(
        stderr.contains("429") && stderr.contains("asking again"),
        "it met a 429 and asked again: {stderr}"
    );
    assert_eq!(
        fleet.row(&op).await.approval_status,
        fleet_core::ApprovalStatus::Approved
    );
    fleet.stop().await;
}

/// The provider's limit, and the payments sent through it.
const LIMIT: u32 = 40;
const PAYMENTS: usize = 600;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_provider_limit_intake_and_execute_share_one_schedule_and_refuse_nothing() {
    let _alone = alone().await;
    let fleet = TestFleet::start().await;
    fleet
        .sim_post("/_sim/rate_limit", json!({"per_second": LIMIT}))
        .await;
    let rate = LIMIT.to_string();
    let env = [("PAYMENTS_RATE_PER_S", rate.as_str()), ("RUST_LOG", "warn")];
    let _prepare = spawn_prepare(&fleet, &env);
    let _executes = [
        fleet.spawn_process("fleet-execute", &env),
        fleet.spawn_process("fleet-execute", &env),
    ];
    let intents: Vec<Value> = (0..PAYMENTS).map(|_| intent()).collect();
    let started = Instant::now();
    for i in &intents {
        fleet.submit(i).await;
    }
    // Approved as each is stored, as people would: execute's calls then compete with
    // the lookups of those still on the queue.
    let mut waiting: Vec<&Value> = intents.iter().collect();
    let deadline = started + Duration::from_secs(180);
    while !waiting.is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} intents never stored",
            waiting.len()
        );
        let mut still = Vec::new();
        for i in waiting {
            if fleet.stored(&op_of(i)).await.is_some() {
                fleet.approve(&op_of(i), &hash_of(i)).await.unwrap();
            } else {
                still.push(i);
            }
        }
        waiting = still;
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    fleet.all_succeed(PAYMENTS, Duration::from_secs(180)).await;
    let elapsed = started.elapsed();

    let mut refused = 0;
    let mut created: HashMap<String, usize> = HashMap::new();
    for r in fleet.sim_requests(None).await {
        if r["status"] == 429 {
            refused += 1;
        } else if r["method"] == "POST" && r["status"] == 201 && r["replayed"] == false {
            *created
                .entry(r["reference"].as_str().unwrap_or_default().to_owned())
                .or_default() += 1;
        }
    }
    for i in &intents {
        let reference = fleet.reference_of(&op_of(i)).await;
        assert_eq!(created.get(&reference), Some(&1), "{}: paid once", op_of(i));
    }
    assert!(fleet.dead_letters(Queue::IntentsPrepare).await.is_empty());
    let ideal = (2 * PAYMENTS) as f64 / f64::from(LIMIT);
    let ratio = elapsed.as_secs_f64() / ideal;
    println!(
        "payee_directory: {PAYMENTS} payments (lookup + create) at {LIMIT}/s: {:.2} s against an ideal {ideal:.2} s ({ratio:.2}×), {refused} refused ({:.3} per operation)",
        elapsed.as_secs_f64(),
        refused as f64 / PAYMENTS as f64
    );
    assert!(
        (refused as f64) < 0.1 * PAYMENTS as f64,
        "{refused} requests refused for {PAYMENTS} operations"
    );
    assert!(ratio < 1.15, "{ratio:.2}× the ideal time");
    fleet.stop().await;
}
