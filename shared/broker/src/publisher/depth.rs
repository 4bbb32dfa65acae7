//! How many messages wait in each work queue's dead-letter queue, read by a worker that
//! publishes anyway (the relay) over its publisher's connection: a passive declare per
//! queue on a channel of its own, so the count costs no connection and no permission
//! beyond the vhost's (a passive declare needs no `configure`).

use lapin::{options::QueueDeclareOptions, types::FieldTable};

use super::Publisher;
use crate::{config::Queue, error::BrokerError, topology::short};

impl Publisher {
    /// Ready messages in each work queue's dead-letter queue, in [`Queue::ALL`]'s order;
    /// `None` while the publisher is not connected (its watcher reconnects it).
    pub async fn dead_letter_depths(&self) -> Result<Option<Vec<(Queue, u32)>>, BrokerError> {
        let channel = {
            let live = self.inner.live.lock().await;
            let Some(live) = live.as_ref().filter(|l| l.usable()) else {
                return Ok(None);
            };
            live.conn
                .create_channel()
                .await
                .map_err(BrokerError::amqp("channel.open"))?
        };
        let mut depths = Vec::with_capacity(Queue::ALL.len());
        let mut result = Ok(());
        for queue in Queue::ALL {
            let name = self.inner.cfg.dead_letter_queue_name(queue);
            let options = QueueDeclareOptions {
                passive: true,
                durable: true,
                ..QueueDeclareOptions::default()
            };
            match channel
                .queue_declare(short(&name)?, options, FieldTable::default())
                .await
            {
                Ok(q) => depths.push((queue, q.message_count())),
                // A missing queue closes the channel: nothing more to read on it.
                Err(e) => {
                    result = Err(BrokerError::amqp("queue.declare passive")(e));
                    break;
                }
            }
        }
        channel.close(200, "OK".into()).await.ok();
        result.map(|()| Some(depths))
    }
}
