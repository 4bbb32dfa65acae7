//! Shared harness for the simulator's HTTP tests: a simulator per test on an ephemeral
//! port, a client that talks to it, and condition waits with deadlines.

use std::future::Future;
use std::time::Duration;

use fleet_provider_sim::{spawn, RunningSim, SimConfig};
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

pub const API_KEY: &str = "sk_test_sim";

pub struct Sim {
    pub running: RunningSim,
    pub http: reqwest::Client,
}

pub async fn start(config: SimConfig) -> Sim {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let running = spawn(config, listener).await.expect("spawn simulator");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http client");
    Sim { running, http }
}

pub async fn start_default() -> Sim {
    start(SimConfig::default()).await
}

/// A simulator with its defaults and the fault `spec` installed.
pub async fn start_with_fault(spec: Value) -> Sim {
    let sim = start_default().await;
    sim.fault(spec).await;
    sim
}

/// A client that gives up after 50 ms, shorter than any delay fault the tests install.
pub fn impatient_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_millis(50))
        .build()
        .unwrap()
}

pub fn payment_body(reference: &str) -> Value {
    json!({
        "amount_minor": 1_250_000,
        "currency": "KZT",
        "beneficiary_id": "vendor_77",
        "invoice_id": "inv_9182",
        "reference": reference,
    })
}

impl Sim {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.running.base_url, path)
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> reqwest::Result<Response> {
        self.http
            .post(self.url(path))
            .bearer_auth(API_KEY)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
    }

    pub async fn create_payment(&self, key: &str, body: &Value) -> Response {
        self.post("/v1/payments", key, body)
            .await
            .expect("POST /v1/payments")
    }

    pub async fn get(&self, path: &str) -> Response {
        self.http
            .get(self.url(path))
            .bearer_auth(API_KEY)
            .send()
            .await
            .expect("GET")
    }

    /// `method path` with no API key and no body: the answer, whatever its status.
    pub async fn without_key(&self, method: reqwest::Method, path: &str) -> Response {
        self.http
            .request(method, self.url(path))
            .send()
            .await
            .expect("request")
    }

    pub async fn admin_post(&self, path: &str, body: &Value) -> Response {
        self.http
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("admin POST")
    }

    pub async fn admin_get(&self, path: &str) -> Value {
        let response = self
            .http
            .get(self.url(path))
            .send()
            .await
            .expect("admin GET");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        response.json().await.expect("admin JSON")
    }

    pub async fn fault(&self, spec: Value) {
        let response = self.admin_post("/_sim/faults", &spec).await;
        assert_eq!(response.status(), StatusCode::CREATED, "installing {spec}");
    }

    pub async fn effects(&self, reference: &str) -> Value {
        self.admin_get(&format!("/_sim/effects?reference={reference}"))
            .await
    }

    pub async fn requests(&self, reference: &str) -> Vec<Value> {
        let log = self
            .admin_get(&format!("/_sim/requests?reference={reference}"))
            .await;
        let mut entries = log["data"].as_array().cloned().unwrap_or_default();
        // When each request arrived is the simulator's clock reading: checked to be one,
        // then set aside so that the entries compare by what was asked and answered.
        for entry in &mut entries {
            let arrived = entry
                .as_object_mut()
                .and_then(|e| e.remove("arrived_at"))
                .unwrap_or_else(|| panic!("a request log entry without arrived_at: {entry}"));
            let arrived = arrived.as_str().unwrap_or_default();
            assert!(
                chrono::DateTime::parse_from_rfc3339(arrived).is_ok(),
                "arrived_at is not a time: {arrived:?}"
            );
        }
        entries
    }

    pub async fn advance_clock(&self, seconds: u64) {
        let response = self
            .admin_post("/_sim/clock/advance", &json!({ "seconds": seconds }))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }
}

pub async fn json_of(response: Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, response.json().await.expect("JSON body"))
}

pub fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<none>")
}

/// Polls `condition` until it holds, failing the test past `deadline`.
pub async fn wait_until<F, Fut>(what: &str, deadline: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let give_up = tokio::time::Instant::now() + deadline;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < give_up,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
