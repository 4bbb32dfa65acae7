//! fleet-api as replicas behind the test's client, for the failover and chaos tests: each
//! replica keeps its address across a SIGKILL and a restart (as a load balancer's backend
//! does), and the client takes them in turn, retrying what was not answered with the same
//! request (the same operation id, the same approval), as an agent and an approver would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_core::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::time::{sleep, Instant};

use crate::{fixed_port, intent_bytes, op_of, ApiProcess, TestFleet, TENANT};

/// fleet-api replicas on addresses of their own.
pub struct ApiReplicas {
    pub apis: Vec<ApiProcess>,
    addrs: Vec<String>,
    env: Vec<(String, String)>,
    /// SIGKILLs and restarts so far.
    pub restarts: usize,
}

impl ApiReplicas {
    /// `n` replicas of fleet-api with `env` on top of the harness's settings, each ready.
    pub async fn start(fleet: &TestFleet, n: usize, env: &[(&str, &str)]) -> ApiReplicas {
        let addrs: Vec<String> = (0..n)
            .map(|_| format!("127.0.0.1:{}", fixed_port()))
            .collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut apis = Vec::with_capacity(n);
        for addr in &addrs {
            apis.push(spawn_at(fleet, addr, &env).await);
        }
        ApiReplicas {
            apis,
            addrs,
            env,
            restarts: 0,
        }
    }

    /// `http://<addr>` of every replica, in order.
    pub fn base_urls(&self) -> Vec<String> {
        self.addrs.iter().map(|a| format!("http://{a}")).collect()
    }

    /// SIGKILLs replica `i` and starts it again on its address; returns once it answers
    /// `/readyz` (which needs the database: during a database failover, once there is a
    /// primary again).
    pub async fn kill_and_restart(&mut self, fleet: &TestFleet, i: usize) {
        self.apis[i].process.kill9();
        self.apis[i] = spawn_at(fleet, &self.addrs[i], &self.env).await;
        self.restarts += 1;
    }

    /// SIGKILLs replica `i` and starts it again, without waiting until it is ready.
    pub fn kill_and_respawn(&mut self, fleet: &TestFleet, i: usize) {
        self.apis[i].process.kill9();
        let env: Vec<(&str, &str)> = self.env_with_addr(i);
        self.apis[i].process = fleet.spawn_process("fleet-api", &env);
        self.restarts += 1;
    }

    fn env_with_addr(&self, i: usize) -> Vec<(&str, &str)> {
        let mut env = vec![
            ("API_ADDR", self.addrs[i].as_str()),
            ("API_WAIT_POLL_MS", "50"),
        ];
        env.extend(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        env.push(LOG_ADDRESSES);
        env
    }

    /// Asserts that every replica still runs (none exited by itself).
    pub fn all_running(&mut self) {
        for api in &mut self.apis {
            assert!(
                api.process.exited().is_none(),
                "{} exited:\n{}",
                api.process.name,
                api.process.log_text()
            );
        }
    }
}

/// The harness reads a replica's addresses from its `info` lines, whatever the test's
/// `RUST_LOG` for the workers.
const LOG_ADDRESSES: (&str, &str) = ("RUST_LOG", "info");

async fn spawn_at(fleet: &TestFleet, addr: &str, env: &[(String, String)]) -> ApiProcess {
    let mut all: Vec<(&str, &str)> = vec![("API_ADDR", addr)];
    all.extend(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    all.push(LOG_ADDRESSES);
    fleet.spawn_api(&all).await
}

/// What the client asked and what the fleet acknowledged, for one operation.
#[derive(Debug, Clone)]
pub struct Driven {
    pub op: String,
    pub hash: String,
    pub submitted: bool,
    pub approved: bool,
    /// The final status the agent's wait answered, if it did.
    pub final_status: Option<String>,
}

/// An agent and an approver talking to the replicas in turn, retrying what was not
/// answered (a refused connection, a 503, a reset) with the same request.
#[derive(Clone)]
pub struct RetryingClient {
    http: reqwest::Client,
    apis: Vec<String>,
    next_api: Arc<AtomicUsize>,
    pub agent: String,
    pub approver: String,
    /// Every write sent: (sent, answered, acknowledged).
    pub writes: Arc<Mutex<Vec<(Instant, Instant, bool)>>>,
    /// How long one operation's submission, approval and wait keep being retried.
    pub deadline: Duration,
}

/// A client's pause between two tries of a request the fleet could not answer.
const RETRY: Duration = Duration::from_millis(100);

impl RetryingClient {
    /// A client of `replicas`, with an agent and an approver (`alice`) of [`TENANT`].
    pub async fn new(fleet: &TestFleet, replicas: &ApiReplicas, deadline: Duration) -> Self {
        RetryingClient {
            http: reqwest::Client::new(),
            apis: replicas.base_urls(),
            next_api: Arc::default(),
            agent: fleet.token("billing-bot", Role::Agent, &[TENANT]).await,
            approver: fleet.token("alice", Role::Approver, &[TENANT]).await,
            writes: Arc::default(),
            deadline,
        }
    }

    fn api(&self) -> &str {
        let turn = self.next_api.fetch_add(1, Ordering::Relaxed);
        &self.apis[turn % self.apis.len()]
    }

    /// POSTs `body` to the next replica as `token`: whether it answered one of `ok`.
    pub async fn write(&self, token: &str, path: &str, body: Vec<u8>, ok: &[StatusCode]) -> bool {
        let sent = Instant::now();
        let answer = self
            .http
            .post(format!("{}{path}", self.api()))
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

    /// Submits `intent` over the API until it is acknowledged (202, or 200 for a copy the
    /// fleet already stored), or the deadline.
    pub async fn submit(&self, intent: &Value, until: Instant) -> bool {
        let ok = [StatusCode::ACCEPTED, StatusCode::OK];
        while Instant::now() < until {
            if self
                .write(&self.agent, "/v1/intents", intent_bytes(intent), &ok)
                .await
            {
                return true;
            }
            sleep(RETRY).await;
        }
        false
    }

    /// Approves `op` at `hash` until a replica answers 200 (404 until prepare stored an
    /// intent that came over the queue), or the deadline.
    pub async fn approve(&self, op: &str, hash: &str, until: Instant) -> bool {
        let body = serde_json::to_vec(&json!({ "payload_hash": hash })).unwrap();
        let path = format!("/v1/operations/{op}/approve");
        while Instant::now() < until {
            if self
                .write(&self.approver, &path, body.clone(), &[StatusCode::OK])
                .await
            {
                return true;
            }
            sleep(RETRY).await;
        }
        false
    }

    /// The agent's wait for `op`'s outcome (`wait_for=final`), asked again of the next
    /// replica whenever one could not answer: the final status it answered, or `None` by
    /// the deadline.
    pub async fn wait_final(&self, op: &str, until: Instant) -> Option<String> {
        while Instant::now() < until {
            let answer = self
                .http
                .get(format!(
                    "{}/v1/operations/{op}?wait_for=final&timeout_s=10",
                    self.api()
                ))
                .bearer_auth(&self.agent)
                .timeout(Duration::from_secs(20))
                .send()
                .await;
            if let Ok(answer) = answer.filter_ok() {
                if let Ok(view) = answer.json::<Value>().await {
                    let status = view["status"].as_str().unwrap_or_default();
                    if ["succeeded", "failed", "cancelled", "disputed"].contains(&status) {
                        return Some(status.to_owned());
                    }
                    // A wait that ran out answers the current view: ask again at once.
                    continue;
                }
            }
            sleep(RETRY).await;
        }
        None
    }

    /// The whole life of one intent as its agent and approver see it: submitted (over the
    /// API, or by `over_queue` when given), approved, and waited for until final.
    pub async fn drive<F, Fut>(self, intent: Value, over_queue: Option<F>) -> Driven
    where
        F: FnOnce(Value, Instant) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let (op, hash) = (op_of(&intent), crate::hash_of(&intent));
        let until = Instant::now() + self.deadline;
        let submitted = match over_queue {
            Some(publish) => publish(intent, until).await,
            None => self.submit(&intent, until).await,
        };
        let approved = submitted && self.approve(&op, &hash, until).await;
        let final_status = if approved {
            self.wait_final(&op, until + self.deadline).await
        } else {
            None
        };
        Driven {
            op,
            hash,
            submitted,
            approved,
            final_status,
        }
    }
}

trait FilterOk {
    fn filter_ok(self) -> Result<reqwest::Response, ()>;
}

impl FilterOk for reqwest::Result<reqwest::Response> {
    fn filter_ok(self) -> Result<reqwest::Response, ()> {
        match self {
            Ok(r) if r.status() == StatusCode::OK => Ok(r),
            _ => Err(()),
        }
    }
}

/// What the rows say of the approvals of `driven`: operations whose approval the fleet
/// answered 200 but the database holds no approval of, or does not hold approved (lost),
/// and operations with more than one approval row or more than one `approved` move in
/// their history (counted twice).
pub async fn approvals_from_rows(fleet: &TestFleet, driven: &[Driven]) -> (usize, usize) {
    let client = fleet.sql().await;
    let (mut lost, mut twice) = (0, 0);
    for d in driven.iter().filter(|d| d.approved) {
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM approvals WHERE operation_id = $1 AND tenant_id = $2),
                        (SELECT count(*) FROM operation_events WHERE operation_id = $1 AND kind = 'approved'),
                        (SELECT approval_status FROM operations WHERE operation_id = $1 AND tenant_id = $2)",
                &[&d.op, &TENANT],
            )
            .await
            .unwrap();
        let (rows, moves, status): (i64, i64, Option<String>) =
            (row.get(0), row.get(1), row.get(2));
        if rows == 0 || status.as_deref() != Some("approved") {
            lost += 1;
        }
        if rows > 1 || moves > 1 {
            twice += 1;
        }
    }
    (lost, twice)
}
