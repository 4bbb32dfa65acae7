//! The consumer loop: connect (with backoff, until shutdown), declare the topology, set
//! the prefetch, subscribe with manual acks, run at most `concurrency` handlers at once,
//! settle each delivery only after its handler returned, and on any connection or
//! channel error rebuild everything on a fresh connection.
//!
//! In-flight handlers outlive the session that delivered them: they live in one
//! `JoinSet` for the whole call, so the concurrency bound holds across reconnects, and
//! a handler whose channel died finishes its work, then fails to ack (counted) and the
//! broker redelivers the message (handlers are idempotent).

use crate::{
    config::{
        BrokerConfig, Queue, DRAIN_TIMEOUT_MS, RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_MIN_MS,
    },
    connection::{self, random_u64, Backoff},
    dead_letter::{retries_of, waiting_since_of, DeadLetterer},
    disposition::{delivery_count, settle, Delivery, Disposition, Handler, SettleContext},
    error::BrokerError,
    health::BrokerHealth,
    metric_names::BROKER_RECONNECTS_TOTAL,
    sender,
    topology::{declare_topology, short},
};
use futures_util::{FutureExt, StreamExt};
use lapin::{
    message::Delivery as AmqpDelivery,
    options::{BasicCancelOptions, BasicConsumeOptions, BasicQosOptions},
    types::FieldTable,
    Channel, Connection, Consumer,
};
use std::{panic::AssertUnwindSafe, sync::Arc, time::Duration};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// Consumes `queue` until `shutdown` is cancelled. Readiness goes to a private
/// [`BrokerHealth`]; use [`consume_with_health`] to report it to `/readyz`.
pub async fn consume<H: Handler>(
    cfg: BrokerConfig,
    queue: Queue,
    handler: Arc<H>,
    concurrency: usize,
    shutdown: CancellationToken,
) -> Result<(), BrokerError> {
    consume_with_health(
        cfg,
        queue,
        handler,
        concurrency,
        shutdown,
        &BrokerHealth::new(),
    )
    .await
}

/// [`consume`], registering this consumer in `health`: it counts as connected while it
/// is subscribed on a live connection and channel.
///
/// Returns `Ok(())` after a graceful shutdown: consumption cancelled, in-flight handlers
/// finished (or aborted after [`DRAIN_TIMEOUT_MS`], their messages redelivered),
/// connection closed. Returns `Err` only for errors retrying cannot fix
/// ([`BrokerError::is_permanent`]): bad config or a topology mismatch.
pub async fn consume_with_health<H: Handler>(
    cfg: BrokerConfig,
    queue: Queue,
    handler: Arc<H>,
    concurrency: usize,
    shutdown: CancellationToken,
    health: &BrokerHealth,
) -> Result<(), BrokerError> {
    cfg.validate()?;
    if concurrency == 0 {
        return Err(BrokerError::Config("concurrency must be > 0".into()));
    }
    let probe = health.register();
    let mut in_flight = JoinSet::new();
    let mut backoff = Backoff::new(RECONNECT_BACKOFF_MIN_MS, RECONNECT_BACKOFF_MAX_MS);
    let outcome = loop {
        let opened = tokio::select! {
            () = shutdown.cancelled() => break Ok(()),
            opened = Session::open(&cfg, queue) => opened,
        };
        match opened {
            Ok(session) => {
                backoff.reset();
                probe.set(&session.conn, &session.channel);
                info!(queue = queue.wire_name(), broker = %cfg.log_target(), "consumer subscribed");
                let end = session
                    .run(&handler, concurrency, &mut in_flight, &shutdown)
                    .await;
                probe.clear();
                match end {
                    SessionEnd::Shutdown => {
                        session.cancel_consumer().await;
                        drain(&mut in_flight, queue).await;
                        connection::close_quietly(&session.conn, "shutdown").await;
                        return Ok(());
                    }
                    SessionEnd::Lost(why) => {
                        warn!(queue = queue.wire_name(), reason = %why, "consumer lost its subscription; reconnecting");
                    }
                }
            }
            Err(err) if err.is_permanent() => break Err(err),
            Err(err) => {
                warn!(queue = queue.wire_name(), broker = %cfg.log_target(), error = %err, "broker unavailable; retrying");
            }
        }
        metrics::counter!(BROKER_RECONNECTS_TOTAL, "role" => "consumer").increment(1);
        tokio::select! {
            () = shutdown.cancelled() => break Ok(()),
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    };
    if let Err(err) = &outcome {
        error!(queue = queue.wire_name(), error = %err, "consumer stopped: not retryable");
    }
    drain(&mut in_flight, queue).await;
    outcome
}

enum SessionEnd {
    Shutdown,
    Lost(String),
}

/// One connection's worth of consuming. Shared with the handler tasks it spawned, so
/// the connection (and their ackers) stays open until the last of them has settled.
struct Session {
    conn: Connection,
    channel: Channel,
    consumer: Consumer,
    dead_letterer: DeadLetterer,
    queue: Queue,
    retry_limit: u32,
    /// Cancelled by a handler task that found the session unusable (see `settle`).
    rebuild: CancellationToken,
}

impl Session {
    async fn open(cfg: &BrokerConfig, queue: Queue) -> Result<Arc<Session>, BrokerError> {
        let conn = connection::open(cfg, &format!("consumer {}", queue.wire_name())).await?;
        let opened = Self::subscribe(&conn, cfg, queue).await;
        match opened {
            Ok((channel, consumer, dead_letterer)) => Ok(Arc::new(Session {
                conn,
                channel,
                consumer,
                dead_letterer,
                queue,
                retry_limit: cfg.retry_limit,
                rebuild: CancellationToken::new(),
            })),
            Err(err) => {
                connection::close_quietly(&conn, "setup failed").await;
                Err(err)
            }
        }
    }

    async fn subscribe(
        conn: &Connection,
        cfg: &BrokerConfig,
        queue: Queue,
    ) -> Result<(Channel, Consumer, DeadLetterer), BrokerError> {
        let channel = conn
            .create_channel()
            .await
            .map_err(BrokerError::amqp("channel.open"))?;
        declare_topology(&channel, cfg).await?;
        channel
            .basic_qos(cfg.prefetch, BasicQosOptions { global: false })
            .await
            .map_err(BrokerError::amqp("basic.qos"))?;
        let dead_letterer = DeadLetterer::new(connection::confirm_channel(conn).await?, cfg, queue);
        let tag = format!("fleet-{}-{:016x}", queue.wire_name(), random_u64());
        let consumer = channel
            .basic_consume(
                short(&cfg.queue_name(queue))?,
                short(&tag)?,
                BasicConsumeOptions::default(), // no_ack: false, i.e. manual acks
                FieldTable::default(),
            )
            .await
            .map_err(BrokerError::amqp("basic.consume"))?;
        Ok((channel, consumer, dead_letterer))
    }

    /// Pulls deliveries while fewer than `concurrency` handlers run, until shutdown or
    /// until the subscription dies.
    async fn run<H: Handler>(
        self: &Arc<Self>,
        handler: &Arc<H>,
        concurrency: usize,
        in_flight: &mut JoinSet<()>,
        shutdown: &CancellationToken,
    ) -> SessionEnd {
        let mut deliveries = self.consumer.clone();
        loop {
            let has_room = in_flight.len() < concurrency;
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return SessionEnd::Shutdown,
                () = self.rebuild.cancelled() => return SessionEnd::Lost("dead-letter publishing failed".into()),
                Some(joined) = in_flight.join_next(), if !in_flight.is_empty() => {
                    log_join(joined, self.queue);
                }
                next = deliveries.next(), if has_room => match next {
                    Some(Ok(delivery)) => {
                        let task = process(Arc::clone(self), Arc::clone(handler), delivery, shutdown.clone());
                        in_flight.spawn(task);
                    }
                    Some(Err(err)) => return SessionEnd::Lost(err.to_string()),
                    None => return SessionEnd::Lost("consumer cancelled by the broker".into()),
                },
            }
        }
    }

    /// Stops new deliveries; already-buffered ones are requeued when the channel closes.
    async fn cancel_consumer(&self) {
        let bound = Duration::from_millis(crate::config::CLOSE_TIMEOUT_MS);
        let cancel = self
            .channel
            .basic_cancel(self.consumer.tag(), BasicCancelOptions::default());
        match tokio::time::timeout(bound, cancel).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                warn!(queue = self.queue.wire_name(), error = %err, "basic.cancel failed")
            }
            Err(_) => warn!(queue = self.queue.wire_name(), "basic.cancel timed out"),
        }
    }
}

/// Runs the handler on one delivery, then settles it. A panicking handler is treated
/// as a transient failure (Retry), so its message is not stuck unacked on the channel.
async fn process<H: Handler>(
    session: Arc<Session>,
    handler: Arc<H>,
    delivery: AmqpDelivery,
    shutdown: CancellationToken,
) {
    let count = delivery_count(&delivery.properties);
    let sender = sender::sender_of(delivery.exchange.as_str(), &delivery.properties);
    // What a retry or a dead letter re-publishes: the sender as seen here, never a
    // `user_id` the consumer's own user may not send.
    let props = sender::carrying(&delivery.properties, sender.as_deref());
    let traceparent = crate::trace_header::traceparent_of(&delivery.properties);
    let view = Delivery {
        body: &delivery.data,
        redelivered: delivery.redelivered,
        delivery_count: count,
        retries: retries_of(&delivery.properties),
        waiting_since: waiting_since_of(&delivery.properties),
        sender: sender.as_deref(),
        traceparent: traceparent.as_deref(),
    };
    let disposition = match AssertUnwindSafe(handler.handle(view)).catch_unwind().await {
        Ok(disposition) => disposition,
        Err(_) => {
            error!(
                queue = session.queue.wire_name(),
                "handler panicked; requeueing the message"
            );
            Disposition::Retry
        }
    };
    let ctx = SettleContext {
        queue: session.queue,
        dead_letterer: &session.dead_letterer,
        shutdown: &shutdown,
        rebuild: &session.rebuild,
        retry_limit: session.retry_limit,
    };
    settle(
        &ctx,
        &delivery.acker,
        disposition,
        &delivery.data,
        &props,
        count,
    )
    .await;
}

/// Waits for in-flight handlers, bounded by [`DRAIN_TIMEOUT_MS`]; then aborts the rest
/// (their messages were not acked, so the broker redelivers them).
async fn drain(in_flight: &mut JoinSet<()>, queue: Queue) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(DRAIN_TIMEOUT_MS);
    while !in_flight.is_empty() {
        match tokio::time::timeout_at(deadline, in_flight.join_next()).await {
            Ok(Some(joined)) => log_join(joined, queue),
            Ok(None) => break,
            Err(_) => {
                warn!(
                    queue = queue.wire_name(),
                    remaining = in_flight.len(),
                    "drain timed out; aborting handlers"
                );
                in_flight.shutdown().await;
                break;
            }
        }
    }
}

fn log_join(joined: Result<(), tokio::task::JoinError>, queue: Queue) {
    // process() catches handler panics, so a JoinError here is a bug in settlement.
    if let Err(err) = joined {
        error!(queue = queue.wire_name(), error = %err, "message task failed");
    }
}
