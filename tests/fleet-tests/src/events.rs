//! Outcome-event helpers: the relay started in-process, and a tap — an exclusive queue
//! bound to this fleet's `fleet.events` exchange, as an agent would bind one — that
//! records every event it receives, in arrival order.

use std::sync::{Arc, Mutex};

use fleet_broker::lapin::{
    options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions},
    types::FieldTable,
    Connection, ConnectionProperties,
};
use fleet_broker::{BrokerHealth, Publisher};
use fleet_relay::{RelayDeps, RelaySettings};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::{eventually, TestFleet};

/// Relay settings for tests: the poll spelled out, so a longer default never slows them.
pub fn fast_relay() -> RelaySettings {
    RelaySettings {
        relay_poll_interval_ms: 25,
        ..RelaySettings::default()
    }
}

/// One event as a consumer received it.
#[derive(Debug, Clone)]
pub struct TappedEvent {
    pub routing_key: String,
    pub content_type: Option<String>,
    pub message_id: Option<String>,
    /// The AMQP `type` property.
    pub amqp_type: Option<String>,
    /// The CloudEvent itself (structured mode: the whole body).
    pub body: Value,
}

impl TappedEvent {
    pub fn id(&self) -> &str {
        self.body["id"].as_str().unwrap_or_default()
    }

    /// The short type: `succeeded` for `fleet.operation.succeeded`.
    pub fn short_type(&self) -> &str {
        self.body["type"]
            .as_str()
            .and_then(|t| t.strip_prefix("fleet.operation."))
            .unwrap_or_default()
    }

    pub fn sequence(&self) -> i64 {
        self.body["data"]["sequence"].as_i64().unwrap_or(-1)
    }

    pub fn subject(&self) -> &str {
        self.body["subject"].as_str().unwrap_or_default()
    }
}

/// A queue bound to the events exchange; dropped with its connection.
pub struct EventTap {
    received: Arc<Mutex<Vec<TappedEvent>>>,
    task: JoinHandle<()>,
    _conn: Connection,
}

impl EventTap {
    /// Everything received so far, in arrival order.
    pub fn events(&self) -> Vec<TappedEvent> {
        self.received.lock().unwrap().clone()
    }

    /// The events of one operation, in arrival order (duplicates included).
    pub fn of(&self, op: &str) -> Vec<TappedEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.subject() == op)
            .collect()
    }

    /// Waits until the operation's events include every short type of `types`, and
    /// returns its events in arrival order.
    pub async fn until_types(&self, op: &str, types: &[&str]) -> Vec<TappedEvent> {
        eventually(&format!("events {types:?} of {op}"), || async {
            let got = self.of(op);
            types
                .iter()
                .all(|t| got.iter().any(|e| e.short_type() == *t))
                .then_some(got)
        })
        .await
    }
}

impl Drop for EventTap {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestFleet {
    /// Binds a fresh exclusive queue to `fleet.events` with `binding` (e.g. `#`).
    pub async fn tap_events(&self, binding: &str) -> EventTap {
        let conn = Connection::connect(&self.broker.amqp_url, ConnectionProperties::default())
            .await
            .expect("tap connection");
        let channel = conn.create_channel().await.expect("tap channel");
        let queue = channel
            .queue_declare(
                "".into(),
                QueueDeclareOptions {
                    exclusive: true,
                    auto_delete: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("tap queue");
        let exchange = self.broker.events_exchange_name();
        channel
            .queue_bind(
                queue.name().clone(),
                exchange.as_str().into(),
                binding.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind the tap");
        let mut consumer = channel
            .basic_consume(
                queue.name().clone(),
                "tap".into(),
                BasicConsumeOptions {
                    no_ack: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("consume the tap");
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(d)) = consumer.next().await {
                let p = &d.properties;
                let event = TappedEvent {
                    routing_key: d.routing_key.to_string(),
                    content_type: p.content_type().as_ref().map(|s| s.to_string()),
                    message_id: p.message_id().as_ref().map(|s| s.to_string()),
                    amqp_type: p.kind().as_ref().map(|s| s.to_string()),
                    body: serde_json::from_slice(&d.data).unwrap_or(Value::Null),
                };
                sink.lock().unwrap().push(event);
            }
        });
        EventTap {
            received,
            task,
            _conn: conn,
        }
    }

    /// Starts the relay in-process (its own publisher, like the binary).
    pub async fn spawn_relay(&mut self, settings: RelaySettings) {
        let publisher = Publisher::connect_with_health(&self.broker, &BrokerHealth::new())
            .await
            .expect("relay publisher");
        let deps = RelayDeps {
            store: self.store.clone(),
            publisher,
            namespace: self.broker.namespace.clone(),
            settings,
        };
        let shutdown = self.shutdown.clone();
        self.workers
            .push(tokio::spawn(fleet_relay::run(deps, shutdown)));
    }

    /// Outbox rows not yet published.
    pub async fn outbox_backlog(&self) -> i64 {
        self.count("SELECT count(*) FROM operation_outbox WHERE published_at IS NULL")
            .await
    }
}
