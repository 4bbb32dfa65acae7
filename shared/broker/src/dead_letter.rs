//! Moving a message elsewhere before acking it, always with a confirm first: to the
//! queue's dead-letter queue with `x-fleet-reason` / `x-fleet-queue` headers, or to its
//! retry queue with `x-fleet-retries` and a per-message TTL (parked for a later try).
//! Also [`dead_letters`], which drains a dead-letter queue so tests can assert
//! "dead-lettered with reason X".

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
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Mutex;

/// Header naming why the fleet dead-lettered a message (a short, bounded code).
pub const REASON_HEADER: &str = "x-fleet-reason";
/// Header naming the work queue (wire name) the message was rejected from.
pub const QUEUE_HEADER: &str = "x-fleet-queue";
/// Header counting how often a message was parked for a retry (absent: never).
pub const RETRIES_HEADER: &str = "x-fleet-retries";
/// When a message was first parked to wait (`Disposition::Wait`), in milliseconds since
/// the Unix epoch: kept through every later wait, so the handler can bound the total.
pub const WAITING_SINCE_HEADER: &str = "x-fleet-waiting-since";
/// Set by quorum queues on each delivery; a parked copy starts a fresh count.
const DELIVERY_COUNT_HEADER: &str = "x-delivery-count";

/// Publishes messages of one work queue to its dead-letter queue or its retry queue.
pub(crate) struct DeadLetterer {
    // Serialised for the same reason as `Publisher`: one confirm in flight per channel.
    channel: Mutex<Channel>,
    exchange: String,
    routing_key: String,
    /// The work queue's retry exchange, bound to its retry queue only: the consumer never
    /// needs the default exchange, nor the right to publish to its own work queue.
    retry_exchange: String,
    retry_queue: String,
    queue: Queue,
}

impl DeadLetterer {
    /// `channel` must be in confirm mode.
    pub(crate) fn new(channel: Channel, cfg: &BrokerConfig, queue: Queue) -> Self {
        Self {
            channel: Mutex::new(channel),
            exchange: cfg.dead_letter_exchange_name(),
            routing_key: cfg.queue_name(queue),
            retry_exchange: cfg.retry_exchange_name(queue),
            retry_queue: cfg.retry_queue_name(queue),
            queue,
        }
    }

    /// Publishes `body` to the retry queue, where it waits `delay` (its TTL) and then goes
    /// back to the work queue, marked as retried `retries` times. Returns once the broker
    /// confirmed it (only then may the original be acked).
    pub(crate) async fn park(
        &self,
        body: &[u8],
        original: &BasicProperties,
        retries: u32,
        delay: Duration,
        waiting: bool,
    ) -> Result<(), BrokerError> {
        let mut headers = original
            .headers()
            .as_ref()
            .map(|h| h.inner().clone())
            .unwrap_or_default();
        headers.remove(DELIVERY_COUNT_HEADER);
        if waiting && !headers.contains_key(WAITING_SINCE_HEADER) {
            let now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            headers.insert(WAITING_SINCE_HEADER.into(), AMQPValue::LongLongInt(now_ms));
        }
        headers.insert(
            RETRIES_HEADER.into(),
            AMQPValue::LongLongInt(i64::from(retries)),
        );
        let props = original
            .clone()
            .with_delivery_mode(PERSISTENT)
            .with_expiration(delay.as_millis().to_string().into())
            .with_headers(FieldTable::from(headers));
        let channel = self.channel.lock().await;
        publish_confirmed(
            &channel,
            &self.retry_exchange,
            &self.retry_queue,
            body,
            props,
        )
        .await
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

pub(crate) fn reason_of(headers: Option<&FieldTable>) -> Option<String> {
    let headers = headers?.inner();
    if let Some(reason) = headers.get(REASON_HEADER).and_then(as_text) {
        return Some(reason);
    }
    headers
        .get("x-first-death-reason")
        .and_then(as_text)
        .map(|r| format!("broker:{r}"))
}

/// How often the message was parked for a retry: `x-fleet-retries`, 0 if absent.
pub(crate) fn retries_of(props: &BasicProperties) -> u32 {
    let value = props
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(RETRIES_HEADER).cloned());
    match value {
        Some(AMQPValue::LongLongInt(v)) => u32::try_from(v.max(0)).unwrap_or(u32::MAX),
        Some(AMQPValue::LongInt(v)) => u32::try_from(v.max(0)).unwrap_or(u32::MAX),
        Some(AMQPValue::LongUInt(v)) => v,
        _ => 0,
    }
}

/// When the message was first parked to wait (`WAITING_SINCE_HEADER`), if it ever was.
pub(crate) fn waiting_since_of(props: &BasicProperties) -> Option<SystemTime> {
    let value = props
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(WAITING_SINCE_HEADER).cloned());
    let ms = match value {
        Some(AMQPValue::LongLongInt(v)) => u64::try_from(v).ok()?,
        Some(AMQPValue::LongInt(v)) => u64::try_from(v).ok()?,
        Some(AMQPValue::LongUInt(v)) => u64::from(v),
        _ => return None,
    };
    UNIX_EPOCH.checked_add(Duration::from_millis(ms))
}

pub(crate) fn as_text(value: &AMQPValue) -> Option<String> {
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

    #[test]
    fn retries_are_read_from_the_header_and_default_to_zero() {
        assert_eq!(retries_of(&BasicProperties::default()), 0);
        let mut h = FieldTable::default();
        h.insert(RETRIES_HEADER.into(), AMQPValue::LongLongInt(3));
        assert_eq!(retries_of(&BasicProperties::default().with_headers(h)), 3);
        let mut h = FieldTable::default();
        h.insert(RETRIES_HEADER.into(), AMQPValue::LongLongInt(-4));
        assert_eq!(retries_of(&BasicProperties::default().with_headers(h)), 0);
    }
}
