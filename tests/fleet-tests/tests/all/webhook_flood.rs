//! The webhook receiver under slow and silent clients, as a real process over TCP: each
//! kind of slow client is cut at its timeout, a flood of them holds no more than
//! `WEBHOOK_MAX_CONNECTIONS` connections, and a provider's signed delivery (retried on
//! 503, as providers do) is still accepted and applied within a deadline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_core::Status;
use fleet_tests::slow_client::trickle;
use fleet_tests::{
    alone, free_addr, hash_of, intent, SignedDelivery, TestFleet, WorkerProcess, WEBHOOK_SECRET,
};
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout, Instant};
use tokio_util::sync::CancellationToken;

const MAX_CONNECTIONS: usize = 16;
const HEADER_TIMEOUT: Duration = Duration::from_millis(1_000);
const BODY_TIMEOUT: Duration = Duration::from_millis(2_000);
/// How late a cut may come on this (shared, 2-core) machine.
const SLACK: Duration = Duration::from_millis(3_000);
/// A trickling client sends one byte this often.
const TRICKLE: Duration = Duration::from_millis(200);
/// Bound on any one misbehaving connection in this test, so a bug fails rather than hangs.
const CONNECTION_GUARD: Duration = Duration::from_secs(30);

/// An approved payment the provider answered `pending`: the row is `accepted`.
async fn accepted_payment(fleet: &TestFleet) -> (String, serde_json::Value) {
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "pending"}))
        .await;
    let intent = intent();
    let op = fleet.submitted(&intent).await;
    assert!(fleet.approve(&op, &hash_of(&intent)).await.unwrap());
    fleet.reaches(&op, Status::Accepted).await;
    (op.clone(), fleet.sim_payment(&op).await)
}

async fn receiver(fleet: &TestFleet) -> (WorkerProcess, String) {
    let addr = free_addr();
    let ingest = fleet.spawn_process(
        "fleet-webhook-ingest",
        &[
            ("WEBHOOK_SECRETS", WEBHOOK_SECRET),
            ("WEBHOOK_ADDR", addr.as_str()),
            ("WEBHOOK_MAX_CONNECTIONS", "16"),
            ("WEBHOOK_MAX_CONCURRENT_REQUESTS", "4"),
            ("WEBHOOK_HEADER_TIMEOUT_MS", "1000"),
            ("WEBHOOK_BODY_TIMEOUT_MS", "2000"),
            ("DB_POOL_SIZE", "2"),
        ],
    );
    for line in [
        "webhook receiver listening",
        "webhook publisher connected",
        "consumer subscribed",
    ] {
        ingest.wait_for_log(line).await;
    }
    (ingest, addr)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(Iterator::count)
        .unwrap_or(0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Connects and sends nothing.
    Silent,
    /// Sends a request line and then one header byte at a time.
    SlowHead,
    /// Sends a complete, well-formed head announcing a 200 KB body, then one byte at a time.
    SlowBody,
}

/// How the server ended one misbehaving connection.
#[derive(Debug, Clone, Copy)]
struct Cut {
    kind: Kind,
    /// The status of the answer, if the server answered before closing.
    status: Option<u16>,
    held: Duration,
}

fn opening(kind: Kind) -> Vec<u8> {
    match kind {
        Kind::Silent => Vec::new(),
        Kind::SlowHead => b"POST /webhooks/payments HTTP/1.1\r\nHost: fleet\r\nX-Slow: ".to_vec(),
        Kind::SlowBody => b"POST /webhooks/payments HTTP/1.1\r\nHost: fleet\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\
              webhook-id: evt_slow\r\nwebhook-timestamp: 1767225600\r\nwebhook-signature: v1,AAAA\r\n\r\n{"
            .to_vec(),
    }
}

/// Opens one connection, misbehaves as `kind` until the server closes it, and says how.
async fn misbehave(addr: &str, kind: Kind) -> Cut {
    let every = (kind != Kind::Silent).then_some(TRICKLE);
    let cut = trickle(addr, &opening(kind), b"x", every, CONNECTION_GUARD)
        .await
        .unwrap_or_else(|| panic!("a {kind:?} connection was held for {CONNECTION_GUARD:?}"));
    Cut {
        kind,
        status: cut.status,
        held: cut.held,
    }
}

fn assert_cut_in_time(cut: Cut, timeout: Duration) {
    assert!(
        cut.held >= timeout - Duration::from_millis(100),
        "{cut:?} cut before its {timeout:?}"
    );
    assert!(
        cut.held <= timeout + SLACK,
        "{cut:?} not cut within {timeout:?} + {SLACK:?}"
    );
}

#[tokio::test]
async fn slow_clients_are_cut_at_their_timeouts_and_a_flood_holds_bounded_connections_while_a_signed_delivery_gets_through(
) {
    // 40 clients in a loop against timeouts of a few hundred milliseconds: on a busy
    // machine a neighbour's load, not the receiver, would decide which one is cut.
    let _alone = alone().await;
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let (op, payment) = accepted_payment(&fleet).await;
    let (ingest, addr) = receiver(&fleet).await;

    // One of each, alone: each is cut at its own timeout.
    let silent = misbehave(&addr, Kind::Silent).await;
    assert_eq!(silent.status, None);
    assert_cut_in_time(silent, HEADER_TIMEOUT);
    let slow_head = misbehave(&addr, Kind::SlowHead).await;
    assert_cut_in_time(slow_head, HEADER_TIMEOUT);
    let slow_body = misbehave(&addr, Kind::SlowBody).await;
    assert_eq!(slow_body.status, Some(408), "{slow_body:?}");
    assert_cut_in_time(slow_body, BODY_TIMEOUT);
    // A kept-alive connection that goes idle after an answer is closed too.
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(b"POST /webhooks/crm HTTP/1.1\r\nHost: fleet\r\nContent-Length: 0\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = idle.read(&mut buf).await.unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 404"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    let answered = Instant::now();
    let eof = timeout(HEADER_TIMEOUT + SLACK, idle.read(&mut buf))
        .await
        .expect("the idle connection is closed");
    assert!(
        matches!(eof, Ok(0) | Err(_))
            && answered.elapsed() >= HEADER_TIMEOUT - Duration::from_millis(100)
    );

    // A flood: far more slow clients than connections, each reconnecting when cut.
    let baseline_fds = open_fds(ingest.pid());
    let cuts = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let kinds = [
        (Kind::Silent, 16),
        (Kind::SlowHead, 16),
        (Kind::SlowBody, 8),
    ];
    let mut attackers = Vec::new();
    for (kind, n) in kinds {
        for _ in 0..n {
            let (addr, cuts, stop) = (addr.clone(), cuts.clone(), stop.clone());
            attackers.push(tokio::spawn(async move {
                while !stop.is_cancelled() {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        cut = misbehave(&addr, kind) => cuts.lock().unwrap().push(cut),
                    }
                }
            }));
        }
    }
    let (pid, fds_stop) = (ingest.pid(), stop.clone());
    let most_fds = tokio::spawn(async move {
        let mut most = 0;
        while !fds_stop.is_cancelled() {
            most = most.max(open_fds(pid));
            sleep(Duration::from_millis(50)).await;
        }
        most
    });
    sleep(Duration::from_millis(1_500)).await;

    // The provider's delivery, retried on 503 or a timeout as a provider retries.
    let mut settled = payment.clone();
    settled["status"] = json!("succeeded");
    let delivery = SignedDelivery::event("evt_through_the_flood", "payment.succeeded", &settled);
    let provider = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let url = format!("http://{addr}/webhooks/payments");
    let sent = Instant::now();
    let mut answers = Vec::new();
    while sent.elapsed() < Duration::from_secs(40) {
        let answer = provider
            .post(&url)
            .header("webhook-id", &delivery.id)
            .header("webhook-timestamp", delivery.timestamp.to_string())
            .header("webhook-signature", &delivery.signature)
            .body(delivery.body.clone())
            .send()
            .await
            .map(|r| r.status());
        answers.push(
            answer
                .as_ref()
                .map(|s| s.as_u16())
                .map_err(|e| e.to_string()),
        );
        if answer.is_ok_and(|s| s == StatusCode::NO_CONTENT) {
            break;
        }
        sleep(Duration::from_millis(250)).await;
    }
    let took = sent.elapsed();
    assert_eq!(
        answers.last().cloned(),
        Some(Ok(204)),
        "the delivery never got through: {answers:?}"
    );
    // Keep flooding a while longer, so every attacker has been cut at least once.
    sleep(Duration::from_secs(4)).await;
    stop.cancel();
    for attacker in attackers {
        attacker.await.unwrap();
    }
    let most_fds = most_fds.await.unwrap();
    let cuts = cuts.lock().unwrap().clone();

    // Applied, though the flood never stopped.
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), payment["id"].as_str());
    // At most WEBHOOK_MAX_CONNECTIONS sockets beyond what the process held before (a
    // few more for a Postgres connection the consumer opens meanwhile).
    assert!(
        most_fds <= baseline_fds + MAX_CONNECTIONS + 4,
        "{most_fds} descriptors open, {baseline_fds} before the flood"
    );
    assert!(
        most_fds >= baseline_fds + MAX_CONNECTIONS / 2,
        "the flood never filled the receiver: {most_fds} vs {baseline_fds}"
    );
    // Every slow client was cut by the server, as designed: slow heads closed, slow
    // bodies answered 408 (too slow) or 503 (no request slot in time).
    assert!(cuts.len() >= 40, "only {} cuts", cuts.len());
    for cut in &cuts {
        match cut.kind {
            Kind::Silent | Kind::SlowHead => assert_eq!(cut.status, None, "{cut:?}"),
            Kind::SlowBody => assert!(matches!(cut.status, Some(408 | 503)), "{cut:?}"),
        }
    }
    let hwm = std::fs::read_to_string(format!("/proc/{}/status", ingest.pid())).unwrap_or_default();
    let peak = hwm
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("VmHWM: ?");
    println!("accepted after {took:?} and {} attempts; {} cuts; {most_fds} fds at most ({baseline_fds} before); {peak}", answers.len(), cuts.len());
    drop(ingest);
    fleet.stop().await;
}
