//! What a handler decides for one delivery, and the single place that decision becomes
//! ack, park-for-a-retry-then-ack or dead-letter-then-ack on the broker.
//!
//! A retry never waits inside the consumer: a message that keeps failing would otherwise
//! hold a handler slot and a prefetch slot for every wait, and enough of them stall the
//! messages behind them. It is parked in the queue's retry queue instead (confirmed,
//! then the original acked) and comes back after its delay, up to the retry limit.
//! The broker expires messages at the head of a queue only, so one may come back up to
//! the longest delay late when a message parked for longer is ahead of it: a delay, never
//! a block, and only for messages that already failed.

use crate::{
    config::{Queue, RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MIN_MS},
    connection::capped_exponential_ms,
    dead_letter::{retries_of, DeadLetterer},
    metric_names::{ACK_FAILURES_TOTAL, MESSAGES_CONSUMED_TOTAL, MESSAGES_DEAD_LETTERED_TOTAL},
};
use lapin::{
    options::{BasicAckOptions, BasicNackOptions},
    types::AMQPValue,
    Acker, BasicProperties,
};
use std::{future::Future, time::Duration};
use tokio_util::sync::CancellationToken;
use tracing::{error, warn};

/// A handler's verdict on one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Done (the handler committed its Postgres transaction, or there was nothing to do).
    Ack,
    /// Transient failure (e.g. Postgres down): the message is parked in the retry queue
    /// and delivered again after a delay that grows with its retries; after
    /// `BrokerConfig::retry_limit` retries it is dead-lettered `retries_exhausted`.
    Retry,
    /// The message cannot be handled yet for a reason outside the fleet that says when to
    /// ask again (a provider's Retry-After): it is parked in the retry queue for `delay`
    /// and comes back, without counting against `retry_limit`. The handler bounds the
    /// total wait itself, from [`Delivery::waiting_since`], and then dead-letters it.
    Wait {
        /// How long the message stays parked.
        delay: Duration,
    },
    /// Contract violation: publish the body to the dead-letter queue with
    /// `x-fleet-reason: <reason>` and `x-fleet-queue`, with confirm, then ack.
    /// `reason` is also a metric label: use a short fixed code (`malformed`,
    /// `unsupported_version`, ...), never an id or free text.
    DeadLetter {
        /// Why, as a short code.
        reason: String,
    },
}

impl Disposition {
    /// `Disposition::DeadLetter` with `reason`.
    pub fn dead_letter(reason: impl Into<String>) -> Self {
        Disposition::DeadLetter {
            reason: reason.into(),
        }
    }
}

/// One message as a handler sees it. `Debug` shows the body's length, not its bytes
/// (bodies may carry personal data; logs must not).
#[derive(Clone, Copy)]
pub struct Delivery<'a> {
    /// The raw body (JSON by contract, but the handler must not trust that).
    pub body: &'a [u8],
    /// The broker's redelivered flag: this message was delivered before.
    pub redelivered: bool,
    /// `x-delivery-count` (failed earlier deliveries, set by quorum queues), 0 if absent.
    pub delivery_count: u32,
    /// How often this message was parked for a retry before (`x-fleet-retries`).
    pub retries: u32,
    /// When this message was first parked by a [`Disposition::Wait`]
    /// (`x-fleet-waiting-since`, the parking process's clock); `None`: it never waited.
    pub waiting_since: Option<std::time::SystemTime>,
    /// The broker user that published it, as the broker validated it (its `user_id`
    /// property, kept through the fleet's retries: see [`crate::SENDER_HEADER`]); `None`
    /// when the publisher did not say.
    pub sender: Option<&'a str>,
    /// The message's W3C `traceparent` header as text, unchecked (kept through the
    /// fleet's retries); `None` when it has none.
    pub traceparent: Option<&'a str>,
}

impl std::fmt::Debug for Delivery<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("body_len", &self.body.len())
            .field("redelivered", &self.redelivered)
            .field("delivery_count", &self.delivery_count)
            .field("retries", &self.retries)
            .field("waiting_since", &self.waiting_since)
            .field("sender", &self.sender)
            .finish()
    }
}

/// Processes one delivery. Must be idempotent: the same message may arrive again, or
/// concurrently, and the handler may be cancelled at any await point.
pub trait Handler: Send + Sync + 'static {
    /// Decides what happens to `delivery`; called before any ack is sent.
    fn handle(&self, delivery: Delivery<'_>) -> impl Future<Output = Disposition> + Send;
}

/// Reads `x-delivery-count`, whatever integer type the broker chose.
pub(crate) fn delivery_count(props: &BasicProperties) -> u32 {
    let Some(headers) = props.headers() else {
        return 0;
    };
    let value = match headers.inner().get("x-delivery-count") {
        Some(AMQPValue::LongLongInt(v)) => i128::from(*v),
        Some(AMQPValue::LongInt(v)) => i128::from(*v),
        Some(AMQPValue::LongUInt(v)) => i128::from(*v),
        Some(AMQPValue::ShortInt(v)) => i128::from(*v),
        Some(AMQPValue::ShortUInt(v)) => i128::from(*v),
        Some(AMQPValue::ShortShortInt(v)) => i128::from(*v),
        Some(AMQPValue::ShortShortUInt(v)) => i128::from(*v),
        _ => 0,
    };
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

/// Everything `settle` needs about where the delivery came from.
pub(crate) struct SettleContext<'a> {
    pub(crate) queue: Queue,
    pub(crate) dead_letterer: &'a DeadLetterer,
    pub(crate) shutdown: &'a CancellationToken,
    /// Cancelled to make the consumer rebuild its session (fresh connection and a
    /// re-declared topology), e.g. when the dead-letter route is broken.
    pub(crate) rebuild: &'a CancellationToken,
    /// Retries a message gets before it is dead-lettered `retries_exhausted`.
    pub(crate) retry_limit: u32,
}

/// The dead-letter reason of a message whose retries are used up.
pub const RETRIES_EXHAUSTED: &str = "retries_exhausted";

/// Applies a disposition to the delivery behind `acker`. Never panics; an ack or nack
/// that is not sent is logged and counted, and the broker will redeliver the message.
pub(crate) async fn settle(
    ctx: &SettleContext<'_>,
    acker: &Acker,
    disposition: Disposition,
    body: &[u8],
    props: &BasicProperties,
    delivery_count: u32,
) {
    let queue = ctx.queue.wire_name();
    let retries = retries_of(props);
    let disposition = match disposition {
        Disposition::Retry if retries >= ctx.retry_limit => {
            warn!(
                queue,
                retries, "message failed on every retry; dead-lettering it"
            );
            Disposition::dead_letter(RETRIES_EXHAUSTED)
        }
        other => other,
    };
    match disposition {
        Disposition::Ack => {
            count_consumed(queue, "ack");
            ack(ctx.queue, acker).await;
        }
        Disposition::Retry => {
            count_consumed(queue, "retry");
            let delay = retry_delay(retries);
            park(
                ctx,
                acker,
                body,
                props,
                (retries + 1, delay, false),
                delivery_count,
            )
            .await;
        }
        Disposition::Wait { delay } => {
            count_consumed(queue, "wait");
            let delay = delay.clamp(Duration::from_millis(1), MAX_WAIT);
            park(
                ctx,
                acker,
                body,
                props,
                (retries, delay, true),
                delivery_count,
            )
            .await;
        }
        Disposition::DeadLetter { reason } => {
            match ctx.dead_letterer.publish(body, props, &reason).await {
                Ok(()) => {
                    count_consumed(queue, "dead_letter");
                    metrics::counter!(MESSAGES_DEAD_LETTERED_TOTAL, "queue" => queue, "reason" => reason_label(&reason))
                        .increment(1);
                    ack(ctx.queue, acker).await;
                }
                Err(err) => {
                    // Acking now would lose the message: requeue and decide again later, on a
                    // rebuilt session whose declare restores a deleted exchange or binding.
                    error!(queue, reason = %reason, error = %err, "dead-letter publish failed; requeueing");
                    ctx.rebuild.cancel();
                    count_consumed(queue, "retry");
                    retry_later(ctx, acker, delivery_count).await;
                }
            }
        }
    }
}

/// The longest single wait a handler may ask for (a broker TTL, and a bound on a
/// provider's Retry-After).
pub const MAX_WAIT: Duration = Duration::from_secs(300);

/// Parks the delivery in the retry queue (`retries`, `delay`, whether it waits rather than
/// retries), then acks it; if the broker refuses the copy, holds the original and
/// requeues it instead, never losing it.
async fn park(
    ctx: &SettleContext<'_>,
    acker: &Acker,
    body: &[u8],
    props: &BasicProperties,
    (retries, delay, waiting): (u32, Duration, bool),
    delivery_count: u32,
) {
    let queue = ctx.queue.wire_name();
    match ctx
        .dead_letterer
        .park(body, props, retries, delay, waiting)
        .await
    {
        Ok(()) => ack(ctx.queue, acker).await,
        Err(err) => {
            // Acking now would lose the message: hold it and requeue it instead,
            // on a rebuilt session whose declare restores a deleted retry queue.
            error!(queue, error = %err, "parking a retry failed; requeueing");
            ctx.rebuild.cancel();
            retry_later(ctx, acker, delivery_count).await;
        }
    }
}

/// Longest reason used verbatim as a metric label.
const MAX_REASON_LABEL_LEN: usize = 48;

/// The `reason` label: the handler's code if it looks like one (short, `[a-z0-9_.-]`),
/// else `other`, so a handler passing an error message cannot explode cardinality.
fn reason_label(reason: &str) -> String {
    let is_code = !reason.is_empty()
        && reason.len() <= MAX_REASON_LABEL_LEN
        && reason
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b));
    if is_code {
        reason.to_owned()
    } else {
        "other".to_owned()
    }
}

/// How long a message waits before its next try, growing with its earlier tries.
pub(crate) fn retry_delay(tries_before: u32) -> Duration {
    Duration::from_millis(capped_exponential_ms(
        RETRY_BACKOFF_MIN_MS,
        RETRY_BACKOFF_MAX_MS,
        tries_before,
    ))
}

/// The fallback when a message cannot be parked (the broker refused the publish): hold
/// it for the delay, then nack it with requeue. Rare, and `x-delivery-limit` bounds it.
async fn retry_later(ctx: &SettleContext<'_>, acker: &Acker, delivery_count: u32) {
    // On shutdown, hand the message back at once instead of holding it.
    tokio::select! {
        () = tokio::time::sleep(retry_delay(delivery_count)) => {}
        () = ctx.shutdown.cancelled() => {}
    }
    let options = BasicNackOptions {
        multiple: false,
        requeue: true,
    };
    report(ctx.queue, "nack", acker.nack(options).await);
}

async fn ack(queue: Queue, acker: &Acker) {
    report(queue, "ack", acker.ack(BasicAckOptions::default()).await);
}

/// Ok(false) means lapin did not send it (channel closed/recovered, or already used):
/// the broker still holds the message and will redeliver it. Never treat it as done.
pub(crate) fn report(queue: Queue, op: &'static str, result: lapin::Result<bool>) -> bool {
    let failure = match result {
        Ok(true) => return true,
        Ok(false) => "not sent (channel closed or delivery already settled)".to_owned(),
        Err(err) => err.to_string(),
    };
    warn!(queue = queue.wire_name(), op, failure = %failure, "message settlement failed; the broker will redeliver");
    metrics::counter!(ACK_FAILURES_TOTAL, "queue" => queue.wire_name(), "op" => op).increment(1);
    false
}

fn count_consumed(queue: &'static str, outcome: &'static str) {
    metrics::counter!(MESSAGES_CONSUMED_TOTAL, "queue" => queue, "outcome" => outcome).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::{message::Delivery as AmqpDelivery, types::FieldTable};

    #[test]
    fn delivery_count_reads_any_integer_and_defaults_to_zero() {
        assert_eq!(delivery_count(&BasicProperties::default()), 0);
        let mut h = FieldTable::default();
        h.insert("x-delivery-count".into(), AMQPValue::LongLongInt(3));
        assert_eq!(
            delivery_count(&BasicProperties::default().with_headers(h)),
            3
        );
        let mut h = FieldTable::default();
        h.insert("x-delivery-count".into(), AMQPValue::LongLongInt(-1));
        assert_eq!(
            delivery_count(&BasicProperties::default().with_headers(h)),
            0
        );
    }

    #[test]
    fn reason_label_keeps_codes_and_folds_free_text() {
        assert_eq!(reason_label("unsupported_version"), "unsupported_version");
        assert_eq!(reason_label("bad amount for card 4111..."), "other");
        assert_eq!(reason_label(""), "other");
        assert_eq!(reason_label(&"x".repeat(49)), "other");
    }

    #[test]
    fn delivery_debug_hides_the_body() {
        let d = Delivery {
            body: b"secret-pan",
            redelivered: false,
            delivery_count: 0,
            retries: 0,
            waiting_since: None,
            sender: None,
            traceparent: None,
        };
        let shown = format!("{d:?}");
        assert!(
            !shown.contains("secret") && shown.contains("body_len: 10"),
            "{shown}"
        );
    }

    #[test]
    fn retry_delay_is_bounded() {
        assert_eq!(retry_delay(0), Duration::from_millis(RETRY_BACKOFF_MIN_MS));
        assert_eq!(
            retry_delay(1_000),
            Duration::from_millis(RETRY_BACKOFF_MAX_MS)
        );
    }

    // An ack that lapin reports as Ok(false) was not done: it is counted, not trusted.
    #[tokio::test]
    async fn an_ack_returning_ok_false_is_reported_as_not_acked() {
        let delivery = AmqpDelivery::mock(1, "".into(), "q".into(), false, b"{}".to_vec());
        let first = delivery.acker.ack(BasicAckOptions::default()).await;
        assert!(report(Queue::OperationsExecute, "ack", first));
        let second = delivery.acker.ack(BasicAckOptions::default()).await;
        assert!(matches!(second, Ok(false)));
        assert!(!report(Queue::OperationsExecute, "ack", second));
    }
}
