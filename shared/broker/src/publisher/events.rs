//! Publishing outcome events to the `fleet.events` topic exchange, a batch at a time.
//!
//! Unlike doorbells, events are published without `mandatory`: an event that no queue is
//! bound for is dropped by the broker, which is what a topic exchange with no subscriber
//! for that type or tenant means. Without `basic.return` nothing can be paired with the
//! wrong confirm, so a whole batch is put on the channel before the confirms are awaited
//! (one round trip per batch, not per event); each confirm still answers for its own
//! message. The caller keeps at most one event per operation in a batch when it needs
//! them in order (a nacked message does not stop the ones after it).

use std::time::Duration;

use lapin::{options::BasicPublishOptions, BasicProperties, Confirmation};
use tokio::time::Instant;

use super::{reconnect, Publisher, PERSISTENT};
use crate::{
    config::{PUBLISH_CONFIRM_TIMEOUT_MS, PUBLISH_RECONNECT_ATTEMPTS},
    connection,
    error::BrokerError,
    topology::short,
};

/// One event to publish: a structured-mode CloudEvent and where it goes.
#[derive(Debug, Clone, Copy)]
pub struct EventMessage<'a> {
    pub routing_key: &'a str,
    /// The CloudEvents `id`, also set as the AMQP `message-id`.
    pub message_id: &'a str,
    /// The CloudEvents `type`, also set as the AMQP `type` property.
    pub event_type: &'a str,
    pub content_type: &'a str,
    pub body: &'a [u8],
    /// The event's W3C `traceparent` (also its CloudEvents `traceparent` attribute), set
    /// as the message's `traceparent` header too.
    pub traceparent: Option<&'a str>,
}

/// What became of a batch: `confirmed[i]` for the i-th event, and the first failure.
#[derive(Debug)]
pub struct EventsPublished {
    pub confirmed: Vec<bool>,
    pub error: Option<BrokerError>,
}

impl Publisher {
    /// Publishes `events` in order (persistent, not `mandatory`) to the events exchange and
    /// waits, within one confirm timeout for the whole batch, for the broker's confirms.
    /// An event is confirmed only if the broker acked it; anything else may or may not be
    /// enqueued, and the caller publishes it again later. A broken connection is replaced
    /// first, like [`Publisher::publish`] does.
    pub async fn publish_events(&self, events: &[EventMessage<'_>]) -> EventsPublished {
        let mut confirmed = vec![false; events.len()];
        if events.is_empty() {
            return EventsPublished {
                confirmed,
                error: None,
            };
        }
        let inner = &self.inner;
        let exchange = inner.cfg.events_exchange_name();
        let exchange_name = match short(&exchange) {
            Ok(name) => name,
            Err(error) => {
                return EventsPublished {
                    confirmed,
                    error: Some(error),
                }
            }
        };
        let mut live = inner.live.lock().await;
        let current = match &mut *live {
            Some(current) if current.usable() => current,
            slot => {
                *slot = None;
                inner.probe.clear();
                match reconnect(&inner.cfg, PUBLISH_RECONNECT_ATTEMPTS).await {
                    Ok(fresh) => {
                        inner.probe.set(&fresh.conn, &fresh.channel);
                        slot.insert(fresh)
                    }
                    Err(error) => {
                        return EventsPublished {
                            confirmed,
                            error: Some(error),
                        }
                    }
                }
            }
        };
        let mut error = None;
        // A routing key that is no AMQP short string stops the batch there, as a failed
        // publish does: the events before it go out, it and those after it do not.
        let mut keys = Vec::with_capacity(events.len());
        let mut bad_key = None;
        for e in events {
            match short(e.routing_key) {
                Ok(key) => keys.push(key),
                Err(bad) => {
                    bad_key = Some(bad);
                    break;
                }
            }
        }
        let options = BasicPublishOptions {
            mandatory: false,
            immediate: false,
        };
        let channel = &current.channel;
        let exchange_name = &exchange_name;
        // Every publish of the batch is started at one poll, in order: each takes its
        // delivery tag and queues its frames before it first waits, so the connection's
        // I/O loop writes the whole batch at once and wakes this task once, instead of one
        // hand-off between the two threads per event. Each confirm still answers for its
        // own message.
        let sends = events.iter().zip(keys).map(|(e, key)| async move {
            let props = crate::trace_header::with_traceparent(
                BasicProperties::default()
                    .with_delivery_mode(PERSISTENT)
                    .with_content_type(e.content_type.into())
                    .with_message_id(e.message_id.into())
                    .with_type(e.event_type.into()),
                e.traceparent,
            );
            channel
                .basic_publish(exchange_name.clone(), key, options, e.body, props)
                .await
                .map_err(BrokerError::amqp("basic.publish"))
        });
        let mut pending = Vec::with_capacity(events.len());
        for sent in futures_util::future::join_all(sends).await {
            match sent {
                Ok(confirm) => pending.push(Some(confirm)),
                // A failed publish leaves the channel unusable: those after it failed
                // too, or are not confirmed below.
                Err(e) => {
                    error.get_or_insert(e);
                    pending.push(None);
                }
            }
        }
        if let Some(e) = bad_key {
            error.get_or_insert(e);
        }
        let deadline = Instant::now() + Duration::from_millis(PUBLISH_CONFIRM_TIMEOUT_MS);
        for (i, confirm) in pending.iter_mut().enumerate() {
            let Some(confirm) = confirm.take() else {
                continue;
            };
            let outcome = match tokio::time::timeout_at(deadline, confirm).await {
                Err(_) => Err(BrokerError::ConfirmTimeout {
                    target: exchange.clone(),
                    timeout_ms: PUBLISH_CONFIRM_TIMEOUT_MS,
                }),
                Ok(Err(e)) => Err(BrokerError::Amqp {
                    op: "publisher confirm",
                    source: e,
                }),
                // Not mandatory, so never returned: an ack is the broker's responsibility.
                Ok(Ok(Confirmation::Ack(_))) => Ok(()),
                Ok(Ok(Confirmation::Nack(_))) => Err(BrokerError::Nacked {
                    target: exchange.clone(),
                }),
                Ok(Ok(Confirmation::NotRequested)) => Err(BrokerError::Config(
                    "publisher channel is not in confirm mode".into(),
                )),
            };
            match outcome {
                Ok(()) => confirmed[i] = true,
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        if error.as_ref().is_some_and(BrokerError::breaks_channel) {
            // Late confirms of this channel must not count for anything: start clean.
            if let Some(old) = live.take() {
                connection::close_quietly(&old.conn, "event publish failed").await;
            }
            inner.probe.clear();
        }
        EventsPublished { confirmed, error }
    }
}
