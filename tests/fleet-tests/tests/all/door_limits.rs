//! What one client can take of fleet-api's door, against the real process over TCP from
//! two source addresses (127.0.0.1 and 127.0.0.2, both the loopback): a source sending no
//! credential, or credentials that are refused, is held to its own rate and answered 429
//! `rate_limited` before anything is looked up — shown by holding the token table locked,
//! where a lookup would wait and the refusal does not — while another source, and a
//! valid principal elsewhere, are served; and a principal whose slow bodies fill its share
//! of the request slots holds no more than that share: another principal is still served,
//! and the greedy one's own next request is turned away 503 `busy`. A body that keeps well
//! above the minimum rate is still cut at the total time, by the API and by the webhook
//! receiver alike.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use fleet_core::access::TOKEN_SECRET_BYTES;
use fleet_core::{Role, Token};
use fleet_tests::{eventually, intent, op_of, ApiProcess, TestFleet};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::{timeout, Instant};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";
/// Requests a source may send without a valid credential before it is held to the rate.
const ANONYMOUS_BURST: usize = 5;
/// How long an answer that needs no lookup may take on this (shared, 2-core) machine; a
/// lookup against the locked token table would wait until the lock is released.
const UNBLOCKED: Duration = Duration::from_secs(3);

/// A client whose connections leave from `ip`.
fn client_from(ip: Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(ip))
        .build()
        .unwrap()
}

/// A token of the right form that no principal holds: telling it apart needs a lookup.
fn unknown_token() -> String {
    Token::from_secret_bytes(&[7; TOKEN_SECRET_BYTES])
        .expose()
        .to_owned()
}

/// `GET /v1/operations` from `client` with `authorization` (none: no credential at all).
async fn list(
    api: &ApiProcess,
    client: &reqwest::Client,
    authorization: Option<&str>,
) -> reqwest::Response {
    let mut request = client.get(api.url("/v1/operations?limit=1"));
    if let Some(value) = authorization {
        request = request.header("Authorization", value);
    }
    request.send().await.expect("answered")
}

/// The problem code of a refusal.
async fn code_of(response: reqwest::Response) -> String {
    let body: Value = response.json().await.unwrap();
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Sends `authorization` from `client` until the answer is 429: the statuses before it,
/// then the 429's problem code and whether it says when to come back.
async fn until_limited(
    api: &ApiProcess,
    client: &reqwest::Client,
    authorization: Option<&str>,
) -> (Vec<StatusCode>, String, bool) {
    let mut before = Vec::new();
    for _ in 0..ANONYMOUS_BURST * 4 {
        let response = list(api, client, authorization).await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            let retry_after = response.headers().contains_key("retry-after");
            return (before, code_of(response).await, retry_after);
        }
        before.push(response.status());
    }
    panic!("never limited after {before:?}");
}

#[tokio::test]
async fn a_source_without_a_valid_credential_is_limited_before_any_lookup_and_no_other_source_is() {
    let fleet = TestFleet::start().await;
    let burst = ANONYMOUS_BURST.to_string();
    let api = fleet
        .spawn_api(&[
            ("API_ANONYMOUS_RATE_PER_S", "1"),
            ("API_ANONYMOUS_RATE_BURST", burst.as_str()),
            ("API_RATE_BURST", "1000"),
        ])
        .await;
    let agent = format!(
        "Bearer {}",
        fleet.token("calm-bot", Role::Agent, &[TENANT]).await
    );
    let unknown = format!("Bearer {}", unknown_token());
    let (one, two) = (
        client_from(Ipv4Addr::new(127, 0, 0, 1)),
        client_from(Ipv4Addr::new(127, 0, 0, 2)),
    );

    // No credential at all: the burst is answered 401, then the source is held to its rate.
    let (before, code, retry_after) = until_limited(&api, &one, None).await;
    assert!(before.len() >= ANONYMOUS_BURST, "{before:?}");
    assert!(
        before.iter().all(|s| *s == StatusCode::UNAUTHORIZED),
        "{before:?}"
    );
    assert_eq!((code.as_str(), retry_after), ("rate_limited", true));
    // Another source is not, and a valid principal at the limited source is still looked
    // up (a source sending no credential stops nobody else's).
    assert_eq!(
        list(&api, &two, None).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        list(&api, &one, Some(&agent)).await.status(),
        StatusCode::OK
    );

    // Refused credentials, with the token table locked: a lookup would wait for the lock.
    let mut owner = fleet.sql().await;
    let lock = owner.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE api_tokens IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    // Malformed credentials are refused without a lookup, and count against the source.
    let (before, code, _) = timeout(UNBLOCKED, until_limited(&api, &one, Some("Bearer nope")))
        .await
        .expect("malformed credentials are refused without a lookup");
    assert!(before.len() >= ANONYMOUS_BURST, "{before:?}");
    assert!(
        before.iter().all(|s| *s == StatusCode::UNAUTHORIZED),
        "{before:?}"
    );
    assert_eq!(code, "rate_limited");
    // Over its rate, the source's well-formed credentials, unknown or valid, are refused
    // at once: nothing is looked up for them.
    for (what, credential) in [("an unknown token", &unknown), ("a valid token", &agent)] {
        let started = Instant::now();
        let answered = timeout(UNBLOCKED, list(&api, &one, Some(credential)))
            .await
            .unwrap_or_else(|_| panic!("{what} from a limited source was looked up"));
        assert_eq!(
            answered.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "{what} after {:?}",
            started.elapsed()
        );
        assert_eq!(code_of(answered).await, "rate_limited", "{what}");
    }
    // The other source's unknown token is looked up: it waits on the lock (so a lookup
    // above would have been seen), and is refused once the lock is gone.
    let waiting = {
        let (api_url, two, unknown) = (
            api.url("/v1/operations?limit=1"),
            two.clone(),
            unknown.clone(),
        );
        tokio::spawn(async move {
            two.get(api_url)
                .header("Authorization", unknown)
                .send()
                .await
                .expect("answered")
                .status()
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "a lookup was answered while the token table was locked"
    );
    lock.rollback().await.unwrap();
    let status = timeout(UNBLOCKED, waiting)
        .await
        .expect("the lookup ends once the lock is gone")
        .unwrap();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The other source's principal is served.
    assert_eq!(
        list(&api, &two, Some(&agent)).await.status(),
        StatusCode::OK
    );
    fleet.stop().await;
}

/// Opens a connection that sends a POST head announcing a body and never the body, and
/// holds it until the server answers or closes it: the answer's status.
async fn slow_body(addr: String, head: String) -> Option<u16> {
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("the head");
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let read = timeout(Duration::from_secs(30), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "a slow body was held for 30 s");
    std::str::from_utf8(&answer)
        .ok()
        .and_then(|a| a.strip_prefix("HTTP/1.1 "))
        .and_then(|a| a.get(..3))
        .and_then(|s| s.parse().ok())
}

#[tokio::test]
async fn a_principal_whose_slow_bodies_fill_its_share_holds_no_more_slots_than_its_share() {
    const ALL: usize = 8;
    const SHARE: usize = 4;
    let fleet = TestFleet::start().await;
    let (all, share) = (ALL.to_string(), SHARE.to_string());
    let api = fleet
        .spawn_api(&[
            ("API_MAX_CONCURRENT_REQUESTS", all.as_str()),
            ("API_MAX_CONCURRENT_REQUESTS_PER_PRINCIPAL", share.as_str()),
            ("API_REQUEST_QUEUE_MS", "1000"),
            // Long enough that the share is still held while the others are measured.
            ("API_BODY_GRACE_MS", "8000"),
            ("API_BODY_TIMEOUT_MS", "10000"),
            ("API_RATE_BURST", "1000"),
        ])
        .await;
    let greedy = fleet.token("greedy-bot", Role::Agent, &[TENANT]).await;
    let calm = fleet.token("calm-bot", Role::Agent, &[OTHER_TENANT]).await;
    let mut mine = intent();
    mine["tenant_id"] = serde_json::json!(OTHER_TENANT);
    api.submitted(&fleet.http, &calm, &mine).await;
    let calm_op = op_of(&mine);

    // As many slow submissions as there are slots in all: without a share per principal
    // they would hold every one.
    let addr = api.base_url.trim_start_matches("http://").to_owned();
    let head = format!(
        "POST /v1/intents HTTP/1.1\r\nHost: fleet\r\nAuthorization: Bearer {greedy}\r\n\
         Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
    );
    let mut slow = JoinSet::new();
    for _ in 0..ALL {
        slow.spawn(slow_body(addr.clone(), head.clone()));
    }
    // The greedy principal's own next request finds its share full: 503 busy.
    let client = reqwest::Client::new();
    eventually("the greedy principal's share to be full", || async {
        let response = client
            .get(api.url("/v1/operations?limit=1"))
            .bearer_auth(&greedy)
            .send()
            .await
            .ok()?;
        (response.status() == StatusCode::SERVICE_UNAVAILABLE).then_some(())
    })
    .await;
    // Meanwhile every other principal is served, again and again.
    for _ in 0..5 {
        let response = client
            .get(api.url(&format!("/v1/operations/{calm_op}")))
            .bearer_auth(&calm)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "the calm agent's read");
    }
    // Of the slow submissions, the share's were read until their grace ran out (408); the
    // others never got a slot and were turned away (503).
    let statuses = slow.join_all().await;
    let late = statuses.iter().filter(|s| **s == Some(408)).count();
    let busy = statuses.iter().filter(|s| **s == Some(503)).count();
    assert_eq!((late, busy), (SHARE, ALL - SHARE), "{statuses:?}");
    fleet.stop().await;
}

/// The body deadlines of the next test: a short grace, a low minimum rate the trickle
/// below keeps well above, and the total time that must cut it anyway.
const TOTAL_MS: u64 = 2_500;
/// How late a cut may come on this (shared, 2-core) machine.
const CUT_SLACK: Duration = Duration::from_millis(2_000);

/// Sends `head` (announcing a body of a megabyte), then 50 bytes every 100 ms (500 bytes a
/// second) until the server answers or closes: the answer's status, when it came, and the
/// bytes of body sent by then.
async fn trickle(addr: &str, head: &str) -> (Option<u16>, Duration, usize) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let started = Instant::now();
    stream.write_all(head.as_bytes()).await.expect("the head");
    let (mut reader, mut writer) = stream.split();
    let (mut answer, mut buf, mut sent, mut writing) = (Vec::new(), [0u8; 1024], 0usize, true);
    let chunk = [b' '; 50];
    let ended = timeout(Duration::from_secs(30), async {
        loop {
            tokio::select! {
                read = reader.read(&mut buf) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                },
                () = tokio::time::sleep(Duration::from_millis(100)), if writing => {
                    writing = writer.write_all(&chunk).await.is_ok();
                    if writing {
                        sent += chunk.len();
                    }
                }
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "a body kept above the minimum rate was read for 30 s"
    );
    let status = std::str::from_utf8(&answer)
        .ok()
        .and_then(|a| a.strip_prefix("HTTP/1.1 "))
        .and_then(|a| a.get(..3))
        .and_then(|s| s.parse().ok());
    (status, started.elapsed(), sent)
}

/// A body that arrived at 500 bytes a second against a minimum of 10 was cut 408 at the
/// total time, not before it and not much after.
fn cut_at_the_total(what: &str, (status, held, sent): (Option<u16>, Duration, usize)) {
    assert_eq!(
        status,
        Some(408),
        "{what}: held {held:?}, {sent} bytes sent"
    );
    let total = Duration::from_millis(TOTAL_MS);
    assert!(
        held >= total - Duration::from_millis(100) && held <= total + CUT_SLACK,
        "{what}: cut after {held:?}, the total is {total:?}"
    );
    // It kept the rate all along: the total time, not the rate, ended it.
    assert!(
        sent as f64 >= 10.0 * held.as_secs_f64(),
        "{what}: only {sent} bytes in {held:?}"
    );
}

#[tokio::test]
async fn a_body_that_keeps_the_minimum_rate_is_still_cut_at_the_total_time_by_the_api_and_the_webhook_receiver(
) {
    let fleet = TestFleet::start().await;
    let total = TOTAL_MS.to_string();
    let api = fleet
        .spawn_api(&[
            ("API_BODY_GRACE_MS", "200"),
            ("API_BODY_MIN_BYTES_PER_S", "10"),
            ("API_BODY_TIMEOUT_MS", total.as_str()),
        ])
        .await;
    let agent = fleet.token("slow-bot", Role::Agent, &[TENANT]).await;
    let api_addr = api.base_url.trim_start_matches("http://").to_owned();
    let api_head = format!(
        "POST /v1/intents HTTP/1.1\r\nHost: fleet\r\nAuthorization: Bearer {agent}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
    );

    let webhook_addr = fleet_tests::free_addr();
    let receiver = fleet.spawn_process(
        "fleet-webhook-ingest",
        &[
            ("WEBHOOK_MODE", "receiver"),
            ("WEBHOOK_SECRETS", fleet_tests::WEBHOOK_SECRET),
            ("WEBHOOK_ADDR", webhook_addr.as_str()),
            ("WEBHOOK_BODY_GRACE_MS", "200"),
            ("WEBHOOK_BODY_MIN_BYTES_PER_S", "10"),
            ("WEBHOOK_BODY_TIMEOUT_MS", total.as_str()),
        ],
    );
    receiver.wait_for_log("webhook receiver listening").await;
    let webhook_head = "POST /webhooks/payments HTTP/1.1\r\nHost: fleet\r\n\
         Content-Type: application/json\r\nwebhook-id: evt_long\r\nwebhook-timestamp: 1767225600\r\n\
         webhook-signature: v1,AAAA\r\nContent-Length: 1000000\r\n\r\n";

    let (through_api, through_receiver) = tokio::join!(
        trickle(&api_addr, &api_head),
        trickle(&webhook_addr, webhook_head)
    );
    cut_at_the_total("the API", through_api);
    cut_at_the_total("the webhook receiver", through_receiver);
    drop(receiver);
    fleet.stop().await;
}
