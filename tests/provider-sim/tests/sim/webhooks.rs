//! The simulator's webhooks (docs/design.md#provider-webhooks): signed deliveries on create and on
//! settle, duplicates, reordering, retries, and holding a create's answer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use axum::Router;
use base64::Engine;
use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::common::{json_of, payment_body, start, start_default, wait_until, Sim};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[derive(Debug, Clone)]
struct Received {
    id: String,
    timestamp: i64,
    signature: String,
    body: Vec<u8>,
}

impl Received {
    fn event(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A webhook endpoint that records what it gets and answers the queued statuses (204
/// once the queue is empty).
#[derive(Default)]
struct Capture {
    received: Mutex<Vec<Received>>,
    answers: Mutex<VecDeque<u16>>,
}

async fn capture_endpoint(answers: &[u16]) -> (Arc<Capture>, String) {
    let capture = Arc::new(Capture::default());
    capture.answers.lock().unwrap().extend(answers);
    let app = Router::new()
        .route("/hook", post(record))
        .with_state(capture.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (capture, url)
}

async fn record(
    State(capture): State<Arc<Capture>>,
    headers: HeaderMap,
    body: Bytes,
) -> AxumStatus {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    capture.received.lock().unwrap().push(Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp").parse().unwrap_or_default(),
        signature: header("webhook-signature"),
        body: body.to_vec(),
    });
    let status = capture.answers.lock().unwrap().pop_front().unwrap_or(204);
    AxumStatus::from_u16(status).unwrap()
}

impl Capture {
    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    async fn wait_for(&self, n: usize) -> Vec<Received> {
        wait_until(
            &format!("{n} webhook deliveries"),
            Duration::from_secs(10),
            || async { self.received.lock().unwrap().len() >= n },
        )
        .await;
        self.received()
    }
}

fn expected_signature(id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode(SECRET.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

async fn configure(sim: &Sim, url: &str, extra: Value) {
    let mut config = json!({"url": url, "secret": SECRET});
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, body) = json_of(sim.admin_post("/_sim/webhooks/config", &config).await).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.get("secret").is_none(),
        "the secret is never echoed: {body}"
    );
}

async fn pending_payment(sim: &Sim, reference: &str) -> String {
    sim.fault(json!({"route": "POST /v1/payments", "kind": "pending"}))
        .await;
    let (status, payment) = json_of(
        sim.create_payment(reference, &payment_body(reference))
            .await,
    )
    .await;
    assert_eq!(
        (status, payment["status"].as_str()),
        (StatusCode::CREATED, Some("pending"))
    );
    payment["id"].as_str().unwrap().to_owned()
}

async fn settle(sim: &Sim, id: &str, status: &str) -> (StatusCode, Value) {
    json_of(
        sim.admin_post(
            &format!("/_sim/payments/{id}/settle"),
            &json!({"status": status}),
        )
        .await,
    )
    .await
}

#[tokio::test]
async fn a_payment_created_succeeded_is_announced_once_with_a_valid_signature() {
    let sim = start_default().await;
    let (capture, url) = capture_endpoint(&[]).await;
    configure(&sim, &url, json!({})).await;
    let (_, payment) = json_of(sim.create_payment("op_a", &payment_body("op_a")).await).await;
    let got = capture.wait_for(1).await;
    let event = got[0].event();
    assert_eq!(event["type"], "payment.succeeded");
    assert_eq!(event["id"], got[0].id.as_str());
    assert_eq!(event["data"]["object"]["id"], payment["id"]);
    assert_eq!(event["data"]["object"]["reference"], "op_a");
    assert_eq!(
        got[0].signature,
        expected_signature(&got[0].id, got[0].timestamp, &got[0].body)
    );
    assert!((got[0].timestamp - chrono::Utc::now().timestamp()).abs() <= 5);
    // A replay made nothing new: nothing more is sent.
    let replay = sim.create_payment("op_a", &payment_body("op_a")).await;
    assert_eq!(replay.headers().get("idempotent-replayed").unwrap(), "true");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(capture.received().len(), 1);
}

#[tokio::test]
async fn a_pending_payment_says_nothing_until_settled_then_announces_its_final_status() {
    let sim = start_default().await;
    let (capture, url) = capture_endpoint(&[]).await;
    configure(&sim, &url, json!({})).await;
    let id = pending_payment(&sim, "op_p").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(capture.received().is_empty(), "pending is not announced");
    let (status, settled) = settle(&sim, &id, "failed").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(settled["payment"]["status"], "failed");
    let got = capture.wait_for(1).await;
    assert_eq!(got[0].event()["type"], "payment.failed");
    assert_eq!(Some(got[0].id.as_str()), settled["event_id"].as_str());
    let (_, fetched) = json_of(sim.get(&format!("/v1/payments/{id}")).await).await;
    assert_eq!(fetched["status"], "failed");
    assert_eq!(settle(&sim, &id, "succeeded").await.0, StatusCode::CONFLICT);
    assert_eq!(
        settle(&sim, "pay_missing", "succeeded").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        settle(&sim, &id, "pending").await.0,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn duplicates_carry_the_same_id_and_each_is_signed() {
    let sim = start_default().await;
    let (capture, url) = capture_endpoint(&[]).await;
    configure(&sim, &url, json!({"duplicate": 2})).await;
    sim.create_payment("op_d", &payment_body("op_d")).await;
    let got = capture.wait_for(3).await;
    assert!(got
        .iter()
        .all(|r| r.id == got[0].id && r.body == got[0].body));
    assert!(got
        .iter()
        .all(|r| r.signature == expected_signature(&r.id, r.timestamp, &r.body)));
}

#[tokio::test]
async fn reordered_events_arrive_newest_first() {
    let sim = start_default().await;
    let (capture, url) = capture_endpoint(&[]).await;
    configure(&sim, &url, json!({"reorder": true, "delay_ms": 300})).await;
    let first = pending_payment(&sim, "op_r1").await;
    let second = pending_payment(&sim, "op_r2").await;
    let (_, a) = settle(&sim, &first, "succeeded").await;
    let (_, b) = settle(&sim, &second, "succeeded").await;
    let got = capture.wait_for(2).await;
    assert_eq!(
        [got[0].id.as_str(), got[1].id.as_str()],
        [
            b["event_id"].as_str().unwrap(),
            a["event_id"].as_str().unwrap()
        ]
    );
}

#[tokio::test]
async fn a_delivery_not_answered_2xx_is_retried_and_logged() {
    let sim = start_default().await;
    let (capture, url) = capture_endpoint(&[503, 500]).await;
    configure(&sim, &url, json!({})).await;
    sim.create_payment("op_t", &payment_body("op_t")).await;
    let got = capture.wait_for(3).await;
    assert!(got.iter().all(|r| r.id == got[0].id));
    let log = sim.admin_get("/_sim/webhooks/deliveries").await;
    let statuses: Vec<_> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [503, 500, 204]);
}

#[tokio::test]
async fn the_simulator_clock_stamps_the_timestamp() {
    let sim = start_default().await;
    let (capture, url) = capture_endpoint(&[]).await;
    configure(&sim, &url, json!({})).await;
    sim.advance_clock(301).await;
    sim.create_payment("op_c", &payment_body("op_c")).await;
    let got = capture.wait_for(1).await;
    assert!(got[0].timestamp - chrono::Utc::now().timestamp() >= 300);
}

#[tokio::test]
async fn a_held_create_answers_after_its_webhook_and_on_release() {
    let sim = start(fleet_provider_sim::SimConfig::default()).await;
    let (capture, url) = capture_endpoint(&[]).await;
    configure(&sim, &url, json!({"hold_response_ms": 20_000})).await;
    let started = Instant::now();
    let create = tokio::spawn({
        let http = sim.http.clone();
        let url = sim.url("/v1/payments");
        async move {
            http.post(url)
                .bearer_auth("sk_test_sim")
                .header("Idempotency-Key", "op_h")
                .json(&payment_body("op_h"))
                .send()
                .await
                .unwrap()
        }
    });
    capture.wait_for(1).await;
    assert!(
        !create.is_finished(),
        "the answer is held while the webhook went out"
    );
    let released = sim.admin_post("/_sim/webhooks/release", &json!({})).await;
    assert_eq!(released.status(), StatusCode::OK);
    let answer = create.await.unwrap();
    assert_eq!(answer.status(), StatusCode::CREATED);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn invalid_configs_are_refused_and_delete_stops_sending() {
    let sim = start_default().await;
    for bad in [
        json!({"url": "ftp://x", "secret": SECRET}),
        json!({"url": "http://127.0.0.1:1/", "secret": "nope"}),
        json!({"url": "http://127.0.0.1:1/", "secret": SECRET, "duplicate": 11}),
        json!({"url": "http://127.0.0.1:1/", "secret": SECRET, "delay_ms": 60_001}),
    ] {
        assert_eq!(
            sim.admin_post("/_sim/webhooks/config", &bad).await.status(),
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    let (capture, url) = capture_endpoint(&[]).await;
    configure(&sim, &url, json!({})).await;
    let deleted = sim
        .without_key(Method::DELETE, "/_sim/webhooks/config")
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    sim.create_payment("op_x", &payment_body("op_x")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(capture.received().is_empty());
}
