//! Taking messages out of the dead-letter queues, over the publisher's connection, so
//! that the relay can keep them in Postgres: each message is taken unacked and acked by
//! the caller only once it is stored, so a crash in between leaves it on the broker to be
//! taken (and stored once, by its key) again.

use lapin::{
    options::{BasicAckOptions, BasicGetOptions},
    types::AMQPValue,
    Acker, Channel,
};

use super::Publisher;
use crate::{
    config::Queue,
    dead_letter::{as_text, reason_of},
    error::BrokerError,
    sender::SENDER_HEADER,
    topology::short,
};

/// A channel for taking dead letters; closed when dropped with the connection, or by
/// [`DeadLetterReader::close`].
pub struct DeadLetterReader {
    channel: Channel,
    publisher: Publisher,
}

/// One message taken (not yet acked) from a work queue's dead-letter queue.
pub struct TakenDeadLetter {
    pub queue: Queue,
    pub body: Vec<u8>,
    /// Who published it, as the broker validated: its `user_id`, or the sender the
    /// consumer that filed it carried over (only fleet consumers may write to the
    /// dead-letter exchange).
    pub user_id: Option<String>,
    pub message_id: Option<String>,
    /// `x-fleet-reason`, or `broker:<x-first-death-reason>`.
    pub reason: Option<String>,
    /// The fleet's and the broker's dead-letter headers, as text.
    pub headers: Vec<(String, String)>,
    /// When the broker dead-lettered it (`x-death`'s time), in seconds since the epoch.
    pub dead_lettered_at_s: Option<i64>,
    acker: Acker,
}

impl Publisher {
    /// A reader over this publisher's connection; `None` while it is not connected.
    pub async fn dead_letter_reader(&self) -> Result<Option<DeadLetterReader>, BrokerError> {
        let live = self.inner.live.lock().await;
        let Some(live) = live.as_ref().filter(|l| l.usable()) else {
            return Ok(None);
        };
        let channel = live
            .conn
            .create_channel()
            .await
            .map_err(BrokerError::amqp("channel.open"))?;
        Ok(Some(DeadLetterReader {
            channel,
            publisher: self.clone(),
        }))
    }
}

impl DeadLetterReader {
    /// The next message of `queue`'s dead-letter queue, unacked; `None` when it is empty.
    pub async fn take(&self, queue: Queue) -> Result<Option<TakenDeadLetter>, BrokerError> {
        let name = self.publisher.inner.cfg.dead_letter_queue_name(queue);
        let Some(message) = self
            .channel
            .basic_get(short(&name)?, BasicGetOptions { no_ack: false })
            .await
            .map_err(BrokerError::amqp("basic.get"))?
        else {
            return Ok(None);
        };
        let delivery = message.delivery;
        let props = &delivery.properties;
        let table = props.headers().as_ref().map(|h| h.inner().clone());
        let mut headers = Vec::new();
        let mut dead_lettered_at_s = None;
        let mut sender = None;
        if let Some(table) = &table {
            for (key, value) in table {
                let key = key.as_str();
                if key == SENDER_HEADER {
                    sender = as_text(value);
                }
                if key == "x-death" {
                    dead_lettered_at_s = first_death_time(value);
                }
                if key.starts_with("x-fleet-") || key.starts_with("x-first-death-") {
                    if let Some(text) = as_text(value).or_else(|| as_number(value)) {
                        headers.push((key.to_owned(), text));
                    }
                }
            }
        }
        headers.sort();
        Ok(Some(TakenDeadLetter {
            queue,
            user_id: props
                .user_id()
                .as_ref()
                .map(|u| u.as_str().to_owned())
                .or(sender),
            message_id: props.message_id().as_ref().map(|m| m.as_str().to_owned()),
            reason: reason_of(props.headers().as_ref()),
            headers,
            dead_lettered_at_s,
            body: delivery.data,
            acker: delivery.acker,
        }))
    }

    pub async fn close(self) {
        self.channel.close(200, "OK".into()).await.ok();
    }
}

impl TakenDeadLetter {
    /// Removes it from the broker: only after it was stored.
    pub async fn ack(self) -> Result<(), BrokerError> {
        let acked = self
            .acker
            .ack(BasicAckOptions::default())
            .await
            .map_err(BrokerError::amqp("basic.ack"))?;
        if acked {
            Ok(())
        } else {
            Err(BrokerError::AckNotSent {
                target: format!("{}.dead", self.queue.wire_name()),
            })
        }
    }
}

fn as_number(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongLongInt(v) => Some(v.to_string()),
        AMQPValue::LongInt(v) => Some(v.to_string()),
        AMQPValue::LongUInt(v) => Some(v.to_string()),
        _ => None,
    }
}

fn first_death_time(value: &AMQPValue) -> Option<i64> {
    let AMQPValue::FieldArray(deaths) = value else {
        return None;
    };
    // The broker puts the most recent death first; the first one is last.
    deaths.as_slice().iter().rev().find_map(|d| match d {
        AMQPValue::FieldTable(t) => match t.inner().get("time")? {
            AMQPValue::Timestamp(s) => i64::try_from(*s).ok(),
            _ => None,
        },
        _ => None,
    })
}
