//! Dead-lettering with a reason: the consumer publishes a rejected body to the queue's
//! dead-letter exchange with `x-fleet-reason` / `x-fleet-queue` headers, with a
//! confirm, before it acks the original. Also [`dead_letters`], which drains a
//! dead-letter queue so tests can assert "dead-lettered with reason X".

use crate::{
    config::{BrokerConfig, Queue, DEAD_LETTERS_MAX_BATCH},
    connection,
    error::BrokerError,
    publisher::{publish_confirmed, PERSISTENT},
    topology::short,
};
use lapin::{
    options::{BasicAckOptions, BasicGetOptions},
    types::{AMQPValue, FieldTable, LongString},
    BasicProperties, Channel,
};
use tokio::sync::Mutex;

/// Header naming why the fleet dead-lettered a message (a short, bounded code).
pub const REASON_HEADER: &str = "x-fleet-reason";
/// Header naming the work queue (wire name) the message was rejected from.
pub const QUEUE_HEADER: &str = "x-fleet-queue";

/// Publishes rejected messages of one work queue to its dead-letter queue.
pub(crate) struct DeadLetterer {
    // Serialised for the same reason as `Publisher`: one confirm in flight per channel.
    channel: Mutex<Channel>,
    exchange: String,
    routing_key: String,
    queue: Queue,
}

impl DeadLetterer {
    /// `channel` must be in confirm mode.
    pub(crate) fn new(channel: Channel, cfg: &BrokerConfig, queue: Queue) -> Self {
        Self {
            channel: Mutex::new(channel),
            exchange: cfg.dead_letter_exchange_name(),
            routing_key: cfg.queue_name(queue),
            queue,
        }
    }

    /// Publishes `body` with the original properties plus the reason headers, and
    /// returns once the broker confirmed it (only then may the original be acked).
    pub(crate) async fn publish(
        &self,
        body: &[u8],
        original: &BasicProperties,
        reason: &str,
    ) -> Result<(), BrokerError> {
        let mut headers = original.headers().clone().unwrap_or_default();
        headers.insert(REASON_HEADER.into(), long_string(reason));
        headers.insert(QUEUE_HEADER.into(), long_string(self.queue.wire_name()));
        let props = original
            .clone()
            .with_delivery_mode(PERSISTENT)
            .with_headers(headers);
        let channel = self.channel.lock().await;
        publish_confirmed(&channel, &self.exchange, &self.routing_key, body, props).await
    }
}

/// Drains (get + ack) up to [`DEAD_LETTERS_MAX_BATCH`] messages from `queue`'s
/// dead-letter queue, returning each body with its reason.
///
/// The reason is the `x-fleet-reason` header. A message the *broker* dead-lettered
/// (for example after `x-delivery-limit`) has no such header; its reason is then
/// `broker:<x-first-death-reason>`, e.g. `broker:delivery_limit`.
pub async fn dead_letters(
    cfg: &BrokerConfig,
    queue: Queue,
) -> Result<Vec<(Vec<u8>, Option<String>)>, BrokerError> {
    let conn = connection::open(cfg, "dead-letter reader").await?;
    let result = drain(&conn, &cfg.dead_letter_queue_name(queue)).await;
    connection::close_quietly(&conn, "drained").await;
    result
}

async fn drain(
    conn: &lapin::Connection,
    name: &str,
) -> Result<Vec<(Vec<u8>, Option<String>)>, BrokerError> {
    let channel = conn
        .create_channel()
        .await
        .map_err(BrokerError::amqp("channel.open"))?;
    let mut out = Vec::new();
    while out.len() < DEAD_LETTERS_MAX_BATCH {
        let Some(message) = channel
            .basic_get(short(name)?, BasicGetOptions { no_ack: false })
            .await
            .map_err(BrokerError::amqp("basic.get"))?
        else {
            break;
        };
        let delivery = message.delivery;
        let reason = reason_of(delivery.properties.headers().as_ref());
        let acked = delivery
            .acker
            .ack(BasicAckOptions::default())
            .await
            .map_err(BrokerError::amqp("basic.ack"))?;
        if !acked {
            // Not acked means it stays in the queue: report rather than miscount.
            return Err(BrokerError::AckNotSent {
                target: name.to_owned(),
            });
        }
        out.push((delivery.data, reason));
    }
    Ok(out)
}

fn reason_of(headers: Option<&FieldTable>) -> Option<String> {
    let headers = headers?.inner();
    if let Some(reason) = headers.get(REASON_HEADER).and_then(as_text) {
        return Some(reason);
    }
    headers
        .get("x-first-death-reason")
        .and_then(as_text)
        .map(|r| format!("broker:{r}"))
}

fn as_text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

fn long_string(s: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_reason_wins_and_broker_reason_is_prefixed() {
        let mut h = FieldTable::default();
        h.insert("x-first-death-reason".into(), long_string("delivery_limit"));
        assert_eq!(
            reason_of(Some(&h)).as_deref(),
            Some("broker:delivery_limit")
        );
        h.insert(REASON_HEADER.into(), long_string("malformed"));
        assert_eq!(reason_of(Some(&h)).as_deref(), Some("malformed"));
        assert_eq!(reason_of(None), None);
    }
}
