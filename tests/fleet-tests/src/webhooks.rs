//! Webhook helpers: webhook-ingest started in-process (the receiver on a real TCP port,
//! the consumer on the test's namespace), deliveries signed the way the provider signs
//! them, the simulator's webhook admin, and a TCP proxy in front of RabbitMQ that plays
//! a broker outage.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::Utc;
use fleet_broker::{
    BrokerConfig, BrokerHealth, Delivery as BrokerDelivery, Disposition, Handler, Queue,
};
use fleet_runtime::{Readiness, Secret};
use fleet_webhook_ingest::signature::sign;
use fleet_webhook_ingest::{
    Envelope, IngestHandler, Mode, SignatureHeaders, WebhookDeps, WebhookSecrets, WebhookSettings,
};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::{eventually, TestFleet};

/// The secret the tests' provider signs with (24 random bytes).
pub const WEBHOOK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// Another valid secret, for "wrong secret" and rotation cases.
pub const OTHER_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// A running webhook-ingest.
pub struct WebhookIngest {
    /// `http://127.0.0.1:<port>`
    pub base_url: String,
    /// What the consumer did with each message it handled, in order (outcome labels:
    /// `new`, `duplicate`, `ignored_transition`, …). Empty for [`TestFleet::spawn_webhook_ingest_binary_run`].
    pub outcomes: Arc<Mutex<Vec<String>>>,
}

impl WebhookIngest {
    /// The receiver's endpoint for the payments provider.
    pub fn url(&self) -> String {
        format!("{}/webhooks/payments", self.base_url)
    }

    /// The receiver's endpoint for whichever provider sends (the simulator puts its
    /// name for `{provider}`).
    pub fn url_per_provider(&self) -> String {
        format!("{}/webhooks/{{provider}}", self.base_url)
    }

    pub fn outcomes(&self) -> Vec<String> {
        self.outcomes.lock().unwrap().clone()
    }

    /// Delivers [`SignedDelivery::event`] to the payments endpoint, which must take it
    /// (204).
    pub async fn deliver(
        &self,
        http: &reqwest::Client,
        id: &str,
        event_type: &str,
        object: &Value,
    ) {
        let status = SignedDelivery::event(id, event_type, object)
            .post(http, &self.url())
            .await;
        assert_eq!(status, reqwest::StatusCode::NO_CONTENT, "{id}");
    }
}

/// The consumer with a tally of outcomes, so a test can count duplicates exactly
/// (the Prometheus counters are shared by every test in the process).
struct Tally {
    inner: IngestHandler,
    outcomes: Arc<Mutex<Vec<String>>>,
}

impl Handler for Tally {
    async fn handle(&self, delivery: BrokerDelivery<'_>) -> Disposition {
        match self.inner.ingest(delivery.body).await {
            Ok(outcome) => {
                self.outcomes
                    .lock()
                    .unwrap()
                    .push(outcome.label().to_owned());
                Disposition::Ack
            }
            Err(e) => e.disposition(),
        }
    }
}

impl TestFleet {
    /// Receiver (signing secret [`WEBHOOK_SECRET`]) and a tallying consumer.
    pub async fn spawn_webhook_ingest(&mut self) -> WebhookIngest {
        let broker = self.broker.clone();
        self.spawn_webhook_ingest_with(broker, &[WEBHOOK_SECRET])
            .await
    }

    /// The receiver publishes through `receiver_broker` (a proxy, say) and accepts
    /// `secrets` (newest first); the consumer reads this fleet's namespace directly.
    pub async fn spawn_webhook_ingest_with(
        &mut self,
        receiver_broker: BrokerConfig,
        secrets: &[&str],
    ) -> WebhookIngest {
        let base_url = self
            .spawn_webhook_run(Mode::Receiver, receiver_broker, secrets)
            .await;
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let inner = IngestHandler::new(
            self.store.narrow(),
            webhook_secrets(secrets),
            WebhookSettings::default().consumer_freshness(),
        );
        let handler = Arc::new(Tally {
            inner,
            outcomes: outcomes.clone(),
        });
        let (broker, shutdown) = (self.broker.clone(), self.shutdown.clone());
        self.workers.push(tokio::spawn(async move {
            fleet_broker::consume_with_health(
                broker,
                Queue::WebhooksIngest,
                handler,
                4,
                shutdown,
                &BrokerHealth::new(),
            )
            .await
            .expect("webhook consumer");
        }));
        WebhookIngest { base_url, outcomes }
    }

    /// The worker's own `run` in `both` mode, exactly as the binary runs it.
    pub async fn spawn_webhook_ingest_binary_run(&mut self, secrets: &[&str]) -> WebhookIngest {
        let broker = self.broker.clone();
        let base_url = self.spawn_webhook_run(Mode::Both, broker, secrets).await;
        WebhookIngest {
            base_url,
            outcomes: Arc::default(),
        }
    }

    async fn spawn_webhook_run(
        &mut self,
        mode: Mode,
        broker: BrokerConfig,
        secrets: &[&str],
    ) -> String {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the webhook receiver");
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let settings = WebhookSettings {
            mode,
            webhook_secrets: Secret::new(secrets.join(",")),
            ..WebhookSettings::default()
        };
        let deps = WebhookDeps {
            store: self.store.narrow(),
            broker,
            health: BrokerHealth::new(),
            readiness: Readiness::new(),
            settings,
            listener: Some(listener),
            concurrency: 4,
        };
        let shutdown = self.shutdown.clone();
        self.workers.push(tokio::spawn(async move {
            fleet_webhook_ingest::run(deps, shutdown)
                .await
                .expect("webhook-ingest");
        }));
        base_url
    }

    /// `POST /_sim/webhooks/config` with [`WEBHOOK_SECRET`] and `extra` settings.
    pub async fn sim_webhooks(&self, url: &str, extra: Value) {
        let mut config = json!({"url": url, "secret": WEBHOOK_SECRET});
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().cloned().unwrap_or_default());
        self.sim_post("/_sim/webhooks/config", config).await;
    }

    /// Lets held create answers go.
    pub async fn sim_release(&self) {
        self.sim_post("/_sim/webhooks/release", json!({})).await;
    }

    /// Settles a pending payment; the simulator sends its webhook. Returns the event id.
    pub async fn sim_settle(&self, payment_id: &str, status: &str) -> String {
        let settled = self
            .sim_post(
                &format!("/_sim/payments/{payment_id}/settle"),
                json!({"status": status}),
            )
            .await;
        settled["event_id"]
            .as_str()
            .expect("webhooks are configured")
            .to_owned()
    }

    /// Waits until the simulator holds a payment with this reference, and returns it.
    pub async fn sim_payment(&self, op: &str) -> Value {
        let reference = &self.reference_of(op).await;
        let payments = self.payments_client(5_000);
        eventually(
            &format!("a payment for {reference} at the provider"),
            || {
                let payments = payments.clone();
                async move {
                    payments
                        .find_payments_by_reference(reference)
                        .await
                        .ok()?
                        .into_iter()
                        .next()
                }
            },
        )
        .await
    }

    /// The HTTP statuses the simulator's webhook deliveries got, in order (`None`: no answer).
    pub async fn sim_webhook_statuses(&self) -> Vec<Option<u64>> {
        let log = self.sim_get("/_sim/webhooks/deliveries").await;
        log["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["status"].as_u64())
            .collect()
    }

    /// Every dedup row: (event_id, operation_id, outcome).
    pub async fn webhook_rows(&self) -> Vec<(String, Option<String>, Option<String>)> {
        let rows = self.sql().await.query("SELECT event_id, operation_id, outcome FROM webhook_events ORDER BY received_at, event_id", &[]).await.unwrap();
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    }
}

/// One delivery as a provider POSTs it.
#[derive(Debug, Clone)]
pub struct SignedDelivery {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub body: Vec<u8>,
}

impl SignedDelivery {
    /// Signed now with `secret`.
    pub fn new(secret: &str, id: &str, body: Vec<u8>) -> SignedDelivery {
        SignedDelivery::at(secret, id, now_s(), body)
    }

    /// A provider event about `object`, signed now with [`WEBHOOK_SECRET`].
    pub fn event(id: &str, event_type: &str, object: &Value) -> SignedDelivery {
        SignedDelivery::new(WEBHOOK_SECRET, id, event_body(id, event_type, object))
    }

    pub fn at(secret: &str, id: &str, timestamp: i64, body: Vec<u8>) -> SignedDelivery {
        let secrets = WebhookSecrets::parse(secret).expect("a valid secret");
        let key = secrets.keys().next().unwrap();
        SignedDelivery {
            id: id.to_owned(),
            timestamp,
            signature: sign(key, id, timestamp, &body),
            body,
        }
    }

    /// The `webhook.v2` message the receiver would publish for it.
    pub fn envelope(&self, provider: &str) -> Vec<u8> {
        let headers = SignatureHeaders {
            id: self.id.clone(),
            timestamp: self.timestamp.to_string(),
            signature: self.signature.clone(),
        };
        Envelope::new(provider, headers, Utc::now(), &self.body).to_bytes()
    }

    /// POSTs it with the three headers; returns the status.
    pub async fn post(&self, http: &reqwest::Client, url: &str) -> reqwest::StatusCode {
        http.post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &self.id)
            .header("webhook-timestamp", self.timestamp.to_string())
            .header("webhook-signature", &self.signature)
            .body(self.body.clone())
            .send()
            .await
            .expect("the receiver answers")
            .status()
    }
}

/// The receiver's secrets, as the consumer parses them.
pub fn webhook_secrets(secrets: &[&str]) -> WebhookSecrets {
    WebhookSecrets::parse(&secrets.join(",")).expect("valid secrets")
}

pub fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A provider event body about `object` (docs/design.md#provider-webhooks).
pub fn event_body(id: &str, event_type: &str, object: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"id": id, "type": event_type, "created_at": "2026-11-29T22:00:00Z", "data": {"object": object}})).unwrap()
}

/// A TCP proxy in front of the broker: while down it closes every connection at once
/// (the broker looks unreachable); while up it forwards bytes both ways.
pub struct BrokerProxy {
    pub addr: SocketAddr,
    up: Arc<AtomicBool>,
    task: JoinHandle<()>,
    /// The forwarding tasks of open connections, for [`BrokerProxy::cut`].
    live: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl BrokerProxy {
    /// A proxy to the broker of `base`, starting down.
    pub async fn start(base: &BrokerConfig) -> BrokerProxy {
        let target = authority(&base.amqp_url).to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let (flag, forwards) = (up.clone(), live.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !flag.load(Ordering::Acquire) {
                    drop(client);
                    continue;
                }
                let target = target.clone();
                let forward = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                forwards.lock().unwrap().push(forward.abort_handle());
            }
        });
        BrokerProxy {
            addr,
            up,
            task,
            live,
        }
    }

    pub fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::Release);
    }

    /// An outage in the middle of things: refuses new connections and drops every open
    /// one (both sides see their TCP connection end).
    pub fn cut(&self) {
        self.set_up(false);
        for forward in self.live.lock().unwrap().drain(..) {
            forward.abort();
        }
    }

    /// `base` (same namespace and credentials) reached through this proxy.
    pub fn broker_config(&self, base: &BrokerConfig) -> BrokerConfig {
        let mut cfg = base.clone();
        cfg.amqp_url = base
            .amqp_url
            .replacen(authority(&base.amqp_url), &self.addr.to_string(), 1);
        cfg
    }
}

impl Drop for BrokerProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `host:port` of an `amqp://user:pass@host:port/vhost` URL.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest)
}
