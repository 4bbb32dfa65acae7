//! The one place the broker topology is declared (every binary calls it at start; it is
//! idempotent), plus the namespace teardown and queue-depth helpers tests use.
//!
//! Per work queue `Q` (names via [`BrokerConfig`]):
//! - `Q`: durable quorum queue, `x-delivery-limit`, dead-lettering to `<ns.>fleet.dlx`
//!   with routing key `Q` (default at-most-once dead-letter strategy);
//! - `Q.dead`: durable quorum queue bound to `<ns.>fleet.dlx` with routing key `Q`;
//! - `Q.retry`: durable quorum queue nobody consumes. A message the consumer parks there
//!   (with a per-message TTL) is dead-lettered back to `Q` through the default exchange
//!   when its TTL ends, at-least-once (the broker keeps it until `Q` has confirmed it);
//! - `<ns.>fleet.to.Q`: durable direct exchange bound to `Q` with routing key `Q`;
//! - `<ns.>fleet.retry.Q`: durable direct exchange bound to `Q.retry` (routing key
//!   `Q.retry`), through which Q's consumer parks a message.
//!
//! Work queues (and their retry queues) are published to through their own `fleet.to.Q`
//! exchange, never the default exchange: the broker grants `write` per exchange, so one
//! exchange per queue is what lets a user publish to one queue and not to another. (The
//! broker's own dead-lettering back from `Q.retry` needs no user permission.)
//!
//! Plus `<ns.>fleet.events`: a durable topic exchange for outcome events. The fleet binds
//! no queue to it; agents and bots bind their own.
//!
//! With [`TopologyMode::Verify`] nothing is declared: every exchange and queue is
//! checked with a passive declare, which needs no permission (bindings cannot be checked
//! that way; a missing one makes a `mandatory` publish come back unroutable).

use crate::{
    config::{BrokerConfig, Queue, TopologyMode},
    connection,
    error::BrokerError,
};
use lapin::{
    options::{
        ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
        QueueDeleteOptions,
    },
    types::{AMQPValue, FieldTable, LongString, ShortString},
    Channel, Connection, ExchangeKind,
};
use tracing::{debug, error, warn};

/// Declares the dead-letter and events exchanges, the dead-letter queues, the work queues
/// with their entry exchanges, and the retry queues.
///
/// Safe to call any number of times with the same config. Fails with
/// [`BrokerError::TopologyMismatch`] if a queue exists with other arguments (for example
/// a different `delivery_limit`), which closes `channel`.
pub async fn declare_topology(channel: &Channel, cfg: &BrokerConfig) -> Result<(), BrokerError> {
    cfg.validate()?;
    match cfg.topology {
        TopologyMode::Declare => declare(channel, cfg).await,
        TopologyMode::Verify => verify(channel, cfg).await,
    }
}

async fn declare(channel: &Channel, cfg: &BrokerConfig) -> Result<(), BrokerError> {
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
        let entry = cfg.entry_exchange_name(q);
        channel
            .exchange_declare(
                short(&entry)?,
                ExchangeKind::Direct,
                durable,
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::declare("exchange.declare entry exchange"))?;
        channel
            .queue_bind(
                short(&cfg.queue_name(q))?,
                short(&entry)?,
                short(&cfg.queue_name(q))?,
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::declare("queue.bind work queue"))?;
    }
    // After the work queues: a retry queue's dead-letter target exists before it does.
    for q in Queue::ALL {
        let retry = cfg.retry_queue_name(q);
        let retry_exchange = cfg.retry_exchange_name(q);
        channel
            .exchange_declare(
                short(&retry_exchange)?,
                ExchangeKind::Direct,
                durable,
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::declare("exchange.declare retry exchange"))?;
        channel
            .queue_declare(
                short(&retry)?,
                QueueDeclareOptions::durable(),
                retry_queue_arguments(cfg, q),
            )
            .await
            .map_err(BrokerError::declare("queue.declare retry queue"))?;
        channel
            .queue_bind(
                short(&retry)?,
                short(&retry_exchange)?,
                short(&retry)?,
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::declare("queue.bind retry queue"))?;
    }
    debug!(namespace = %cfg.namespace, "broker topology declared");
    Ok(())
}

/// Passive declares of every exchange and queue: fails (and closes `channel`) with
/// NOT_FOUND if one is missing.
async fn verify(channel: &Channel, cfg: &BrokerConfig) -> Result<(), BrokerError> {
    let passive_exchange = ExchangeDeclareOptions {
        passive: true,
        ..ExchangeDeclareOptions::default()
    };
    let mut exchanges = vec![cfg.dead_letter_exchange_name()];
    exchanges.extend(Queue::ALL.map(|q| cfg.entry_exchange_name(q)));
    exchanges.extend(Queue::ALL.map(|q| cfg.retry_exchange_name(q)));
    for name in &exchanges {
        channel
            .exchange_declare(
                short(name)?,
                ExchangeKind::Direct,
                passive_exchange,
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::amqp("exchange.declare passive"))?;
    }
    channel
        .exchange_declare(
            short(&cfg.events_exchange_name())?,
            ExchangeKind::Topic,
            passive_exchange,
            FieldTable::default(),
        )
        .await
        .map_err(BrokerError::amqp("exchange.declare passive"))?;
    for q in Queue::ALL {
        for name in [
            cfg.queue_name(q),
            cfg.dead_letter_queue_name(q),
            cfg.retry_queue_name(q),
        ] {
            channel
                .queue_declare(
                    short(&name)?,
                    QueueDeclareOptions::durable().passive(),
                    FieldTable::default(),
                )
                .await
                .map_err(BrokerError::amqp("queue.declare passive"))?;
        }
    }
    debug!(namespace = %cfg.namespace, "broker topology verified");
    Ok(())
}

/// Declares (or, with [`TopologyMode::Verify`], checks) the topology on a connection of
/// its own: what an admin runs once before least-privilege users connect.
pub async fn ensure_topology(cfg: &BrokerConfig) -> Result<(), BrokerError> {
    cfg.validate()?;
    let conn = connection::open(cfg, "topology").await?;
    let result = async {
        let channel = conn
            .create_channel()
            .await
            .map_err(BrokerError::amqp("channel.open"))?;
        declare_topology(&channel, cfg).await
    }
    .await;
    connection::close_quietly(&conn, "topology done").await;
    result
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
        names.push(cfg.queue_name(q));
        names.push(cfg.dead_letter_queue_name(q));
        names.push(cfg.retry_queue_name(q));
    }
    let mut failures = 0usize;
    for name in &names {
        if let Err(err) = delete(&conn, Doomed::Queue, name).await {
            failures += 1;
            warn!(queue = %name, error = %err, "queue delete failed");
        }
    }
    let mut exchanges = vec![cfg.dead_letter_exchange_name(), cfg.events_exchange_name()];
    exchanges.extend(Queue::ALL.map(|q| cfg.entry_exchange_name(q)));
    exchanges.extend(Queue::ALL.map(|q| cfg.retry_exchange_name(q)));
    for name in &exchanges {
        if let Err(err) = delete(&conn, Doomed::Exchange, name).await {
            failures += 1;
            warn!(exchange = %name, error = %err, "exchange delete failed");
        }
    }
    connection::close_quietly(&conn, "teardown done").await;
    if failures > 0 {
        warn!(namespace = %cfg.namespace, failures, "namespace teardown left objects behind");
    }
    Ok(())
}

/// What a namespace's teardown deletes.
#[derive(Debug, Clone, Copy)]
enum Doomed {
    Queue,
    Exchange,
}

/// Deletes one queue or exchange on a channel of its own: one refused delete closes its
/// channel, and the others still go.
async fn delete(conn: &Connection, kind: Doomed, name: &str) -> Result<(), BrokerError> {
    let channel = conn
        .create_channel()
        .await
        .map_err(BrokerError::amqp("channel.open"))?;
    match kind {
        Doomed::Queue => {
            channel
                .queue_delete(short(name)?, QueueDeleteOptions::default())
                .await
                .map_err(BrokerError::amqp("queue.delete"))?;
        }
        Doomed::Exchange => channel
            .exchange_delete(short(name)?, ExchangeDeleteOptions::default())
            .await
            .map_err(BrokerError::amqp("exchange.delete"))?,
    }
    channel.close(200, "OK".into()).await.ok();
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
