//! The one place the broker topology is declared (every binary calls it at start; it is
//! idempotent), plus the namespace teardown and queue-depth helpers tests use.
//!
//! Per work queue `Q` (names via [`BrokerConfig`]):
//! - `Q`: durable quorum queue, `x-delivery-limit`, dead-lettering to `<ns.>fleet.dlx`
//!   with routing key `Q` (default at-most-once dead-letter strategy);
//! - `Q.dead`: durable quorum queue bound to `<ns.>fleet.dlx` with routing key `Q`;
//! - `Q.retry`: durable quorum queue nobody consumes. A message the consumer parks there
//!   (with a per-message TTL) is dead-lettered back to `Q` through the default exchange
//!   when its TTL ends, at-least-once (the broker keeps it until `Q` has confirmed it).
//!
//! Work queues are published to through the default exchange (routing key = queue name).
//!
//! Plus `<ns.>fleet.events`: a durable topic exchange for outcome events. The fleet binds
//! no queue to it; agents and bots bind their own.

use crate::{
    config::{BrokerConfig, Queue},
    connection,
    error::BrokerError,
};
use lapin::{
    options::{
        ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
        QueueDeleteOptions,
    },
    types::{AMQPValue, FieldTable, LongString, ShortString},
    Channel, ExchangeKind,
};
use tracing::{debug, error, warn};

/// Declares the dead-letter exchange, the dead-letter queues and the work queues.
///
/// Safe to call any number of times with the same config. Fails with
/// [`BrokerError::TopologyMismatch`] if a queue exists with other arguments (for example
/// a different `delivery_limit`), which closes `channel`.
pub async fn declare_topology(channel: &Channel, cfg: &BrokerConfig) -> Result<(), BrokerError> {
    cfg.validate()?;
    let dlx = cfg.dead_letter_exchange_name();
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..ExchangeDeclareOptions::default()
    };
    channel
        .exchange_declare(
            short(&dlx)?,
            ExchangeKind::Direct,
            durable,
            FieldTable::default(),
        )
        .await
        .map_err(BrokerError::declare(
            "exchange.declare dead-letter exchange",
        ))?;

    channel
        .exchange_declare(
            short(&cfg.events_exchange_name())?,
            ExchangeKind::Topic,
            durable,
            FieldTable::default(),
        )
        .await
        .map_err(BrokerError::declare("exchange.declare events exchange"))?;

    // Dead-letter queues first: when a work queue exists its dead-letter route does too.
    for q in Queue::ALL {
        let dead = cfg.dead_letter_queue_name(q);
        channel
            .queue_declare(
                short(&dead)?,
                QueueDeclareOptions::durable(),
                dead_letter_queue_arguments(),
            )
            .await
            .map_err(BrokerError::declare("queue.declare dead-letter queue"))?;
        channel
            .queue_bind(
                short(&dead)?,
                short(&dlx)?,
                short(&cfg.queue_name(q))?,
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::declare("queue.bind dead-letter queue"))?;
    }
    for q in Queue::ALL {
        channel
            .queue_declare(
                short(&cfg.queue_name(q))?,
                QueueDeclareOptions::durable(),
                work_queue_arguments(cfg, q),
            )
            .await
            .map_err(BrokerError::declare("queue.declare work queue"))?;
    }
    // After the work queues: a retry queue's dead-letter target exists before it does.
    for q in Queue::ALL {
        channel
            .queue_declare(
                short(&cfg.retry_queue_name(q))?,
                QueueDeclareOptions::durable(),
                retry_queue_arguments(cfg, q),
            )
            .await
            .map_err(BrokerError::declare("queue.declare retry queue"))?;
    }
    debug!(namespace = %cfg.namespace, "broker topology declared");
    Ok(())
}

/// The arguments of a work queue; exposed so tests can prove the broker stored them.
pub fn work_queue_arguments(cfg: &BrokerConfig, q: Queue) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert("x-queue-type".into(), long_string("quorum"));
    args.insert(
        "x-delivery-limit".into(),
        AMQPValue::LongLongInt(i64::from(cfg.delivery_limit)),
    );
    args.insert(
        "x-dead-letter-exchange".into(),
        long_string(&cfg.dead_letter_exchange_name()),
    );
    args.insert(
        "x-dead-letter-routing-key".into(),
        long_string(&cfg.queue_name(q)),
    );
    args
}

/// The arguments of a work queue's retry queue; exposed so tests can prove the broker
/// stored them.
pub fn retry_queue_arguments(cfg: &BrokerConfig, q: Queue) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert("x-queue-type".into(), long_string("quorum"));
    // The default exchange routes by queue name: straight back to the work queue.
    args.insert("x-dead-letter-exchange".into(), long_string(""));
    args.insert(
        "x-dead-letter-routing-key".into(),
        long_string(&cfg.queue_name(q)),
    );
    // At-least-once dead-lettering (it requires reject-publish): an expired message
    // leaves the retry queue only once the work queue has confirmed it.
    args.insert(
        "x-dead-letter-strategy".into(),
        long_string("at-least-once"),
    );
    args.insert("x-overflow".into(), long_string("reject-publish"));
    args
}

fn dead_letter_queue_arguments() -> FieldTable {
    let mut args = FieldTable::default();
    args.insert("x-queue-type".into(), long_string("quorum"));
    args
}

/// Ready (not unacknowledged) messages in a work queue, via a passive declare.
pub async fn message_count(cfg: &BrokerConfig, queue: Queue) -> Result<u32, BrokerError> {
    passive_count(cfg, &cfg.queue_name(queue)).await
}

/// Ready messages in a work queue's dead-letter queue, via a passive declare.
pub async fn dead_letter_count(cfg: &BrokerConfig, queue: Queue) -> Result<u32, BrokerError> {
    passive_count(cfg, &cfg.dead_letter_queue_name(queue)).await
}

async fn passive_count(cfg: &BrokerConfig, name: &str) -> Result<u32, BrokerError> {
    let conn = connection::open(cfg, "inspect").await?;
    let result = async {
        let channel = conn
            .create_channel()
            .await
            .map_err(BrokerError::amqp("channel.open"))?;
        let q = channel
            .queue_declare(
                short(name)?,
                QueueDeclareOptions::durable().passive(),
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::amqp("queue.declare passive"))?;
        Ok(q.message_count())
    }
    .await;
    connection::close_quietly(&conn, "inspected").await;
    result
}

/// Deletes every queue and exchange of `cfg.namespace` (test teardown).
///
/// Refuses the empty (production) namespace. Failures are logged, not returned: a
/// teardown must not mask the test's own result.
pub async fn delete_namespace(cfg: &BrokerConfig) {
    if cfg.namespace.is_empty() {
        error!("delete_namespace refused: the empty namespace is production");
        return;
    }
    if let Err(err) = try_delete_namespace(cfg).await {
        warn!(namespace = %cfg.namespace, error = %err, "namespace teardown incomplete");
    }
}

async fn try_delete_namespace(cfg: &BrokerConfig) -> Result<(), BrokerError> {
    let conn = connection::open(cfg, "teardown").await?;
    let mut names: Vec<String> = Vec::with_capacity(Queue::ALL.len() * 3);
    for q in Queue::ALL {
        names.push(cfg.retry_queue_name(q));
        names.push(cfg.queue_name(q));
        names.push(cfg.dead_letter_queue_name(q));
    }
    let mut failures = 0usize;
    for name in &names {
        // A fresh channel per delete: one refused delete closes its channel.
        let deleted = async {
            let channel = conn
                .create_channel()
                .await
                .map_err(BrokerError::amqp("channel.open"))?;
            channel
                .queue_delete(short(name)?, QueueDeleteOptions::default())
                .await
                .map_err(BrokerError::amqp("queue.delete"))?;
            channel.close(200, "OK".into()).await.ok();
            Ok::<(), BrokerError>(())
        }
        .await;
        if let Err(err) = deleted {
            failures += 1;
            warn!(queue = %name, error = %err, "queue delete failed");
        }
    }
    for exchange in [cfg.dead_letter_exchange_name(), cfg.events_exchange_name()] {
        let channel = conn
            .create_channel()
            .await
            .map_err(BrokerError::amqp("channel.open"))?;
        if let Err(err) = channel
            .exchange_delete(short(&exchange)?, ExchangeDeleteOptions::default())
            .await
        {
            failures += 1;
            warn!(exchange = %exchange, error = %err, "exchange delete failed");
        }
        channel.close(200, "OK".into()).await.ok();
    }
    connection::close_quietly(&conn, "teardown done").await;
    if failures > 0 {
        warn!(namespace = %cfg.namespace, failures, "namespace teardown left objects behind");
    }
    Ok(())
}

/// A name as an AMQP short string, or a config error (no panic) if it is too long.
pub(crate) fn short(name: &str) -> Result<ShortString, BrokerError> {
    ShortString::try_new(name)
        .map_err(|e| BrokerError::Config(format!("name not representable in AMQP: {e}")))
}

fn long_string(s: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(s))
}
