//! Outcome-event helpers: the relay started in-process, and a tap — an exclusive queue
//! bound to this fleet's `fleet.events` exchange, as an agent would bind one — that
//! records every event it receives, in arrival order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use fleet_broker::lapin::{
    options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions},
    types::FieldTable,
    Connection, ConnectionProperties,
};
use fleet_broker::{BrokerHealth, Publisher};
use fleet_core::events::{EventData, EventType, OperationEventData};
use fleet_core::view::NotAView;
use fleet_core::OperationView;
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
    /// An operation's event's `data`, read into its type as it arrived (unknown members
    /// refused); `None` for a mandate's event.
    pub data: Option<Result<OperationEventData, NotAView>>,
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

    /// `data.sequence` (a mandate's event's too).
    pub fn sequence(&self) -> i64 {
        match &self.data {
            Some(_) => self.data().sequence,
            None => self.body["data"]["sequence"].as_i64().unwrap_or(-1),
        }
    }

    /// An operation's event's `data`, as read into its type; panics, naming the member,
    /// on data that is not exactly an operation view, `sequence` and `approval`.
    pub fn data(&self) -> &OperationEventData {
        match &self.data {
            Some(Ok(data)) => data,
            Some(Err(e)) => panic!("event {}: {e}\n{:#}", self.id(), self.body["data"]),
            None => panic!(
                "event {} is no operation's: {}",
                self.id(),
                self.body["type"]
            ),
        }
    }

    /// The operation view the event carries.
    pub fn view(&self) -> &OperationView {
        &self.data().view
    }

    pub fn subject(&self) -> &str {
        self.body["subject"].as_str().unwrap_or_default()
    }

    /// The operation the event reports (`data.operation_id`); empty for a mandate's event.
    pub fn operation_id(&self) -> &str {
        match &self.data {
            Some(_) => self.view().operation_id.as_str(),
            None => "",
        }
    }
}

/// A received CloudEvent's `data`, read as the store reads the outbox row it came from
/// ([`EventData::read`]): `None` unless the `type` names an operation's event.
pub fn operation_data(body: &Value) -> Option<Result<OperationEventData, NotAView>> {
    let short = body["type"]
        .as_str()?
        .strip_prefix(fleet_core::events::TYPE_PREFIX)?;
    let event_type = EventType::parse(short)?;
    Some(
        EventData::read(event_type, body["data"].clone())
            .map(|d| *d.into_operation().expect("an operation's type")),
    )
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
            .filter(|e| e.operation_id() == op)
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
        let conn = Connection::connect(self.broker.node_urls()[0], ConnectionProperties::default())
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
                let body: Value = serde_json::from_slice(&d.data).unwrap_or(Value::Null);
                let event = TappedEvent {
                    routing_key: d.routing_key.to_string(),
                    content_type: p.content_type().as_ref().map(|s| s.to_string()),
                    message_id: p.message_id().as_ref().map(|s| s.to_string()),
                    amqp_type: p.kind().as_ref().map(|s| s.to_string()),
                    data: operation_data(&body),
                    body,
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
            store: self.store.narrow(),
            publisher,
            namespace: self.broker.namespace.clone(),
            settings,
            notifier: None,
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

/// What a consumer bound to every event of a run received, against the operation log.
#[derive(Debug, Default)]
pub struct EventOrder {
    pub events: usize,
    /// A first delivery of a sequence that was not the next one of its operation.
    pub out_of_order: usize,
    /// Operations whose highest sequence received is below the events their log holds.
    pub gaps: usize,
}

impl EventOrder {
    /// Judges `received` ((subject, `data.sequence`) in arrival order): each operation's
    /// first deliveries must be 1, 2, 3, … (a redelivered duplicate is allowed), up to the
    /// number of events `logged` says its log holds.
    pub fn of(received: &[(String, i64)], logged: &BTreeMap<String, i64>) -> EventOrder {
        let mut highest: BTreeMap<&str, i64> = BTreeMap::new();
        let mut order = EventOrder {
            events: received.len(),
            ..Default::default()
        };
        for (op, sequence) in received {
            let seen = highest.entry(op).or_insert(0);
            if *sequence == *seen + 1 {
                *seen = *sequence;
            } else if *sequence > *seen {
                order.out_of_order += 1;
                *seen = *sequence;
            }
        }
        order.gaps = logged
            .iter()
            .filter(|(op, n)| highest.get(op.as_str()).copied().unwrap_or(0) < **n)
            .count();
        order
    }

    /// Whether every operation of `logged` has reached its last event in `received`.
    pub fn complete(received: &[(String, i64)], logged: &BTreeMap<String, i64>) -> bool {
        EventOrder::of(received, logged).gaps == 0
    }
}

impl TestFleet {
    /// How many outcome events each operation's log numbered (the outbox keeps them for
    /// its retention, a day by default).
    pub async fn logged_event_counts(&self) -> BTreeMap<String, i64> {
        self.store
            .pooled_session()
            .await
            .expect("a connection")
            .query(
                "SELECT operation_id, count(*) FROM operation_outbox GROUP BY operation_id",
                &[],
            )
            .await
            .expect("the outbox")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }
}

impl TappedEvent {
    /// (operation id, `data.sequence`): what [`EventOrder`] judges.
    pub fn sequenced(&self) -> (String, i64) {
        let sequence = self.data.as_ref().map_or(0, |_| self.sequence());
        (self.operation_id().to_owned(), sequence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
        pairs.iter().map(|(op, n)| ((*op).to_owned(), *n)).collect()
    }

    #[test]
    fn duplicates_are_allowed_skips_and_gaps_are_not() {
        let logged: BTreeMap<String, i64> = [("a".to_owned(), 3), ("b".to_owned(), 2)].into();
        let in_order = seq(&[("a", 1), ("b", 1), ("a", 2), ("a", 2), ("b", 2), ("a", 3)]);
        let judged = EventOrder::of(&in_order, &logged);
        assert_eq!((judged.events, judged.out_of_order, judged.gaps), (6, 0, 0));
        assert!(EventOrder::complete(&in_order, &logged));
        let skipped = seq(&[("a", 1), ("a", 3), ("b", 1)]);
        let judged = EventOrder::of(&skipped, &logged);
        assert_eq!((judged.out_of_order, judged.gaps), (1, 1));
        assert!(!EventOrder::complete(&skipped, &logged));
    }
}
