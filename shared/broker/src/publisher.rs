//! Publishing with publisher confirms: the only way the fleet enqueues a message.
//!
//! One connection and one confirm-mode channel per [`Publisher`], shared by its clones.
//! Publishes are serialised on that channel on purpose: lapin pairs a `basic.return`
//! with whichever confirm completes next (and completes `multiple` acks in hash-map
//! order), so with several publishes in flight an unroutable message could be reported
//! as delivered. One in flight at a time makes "confirmed" mean "enqueued".
//!
//! A broken connection is replaced by the next `publish` (bounded attempts) and, while
//! the publisher is idle, by a watcher task; so readiness recovers even when nothing is
//! published (a not-ready webhook receiver gets no traffic that could trigger it).

use crate::{
    config::{
        BrokerConfig, Queue, PUBLISHER_WATCH_INTERVAL_MS, PUBLISH_CONFIRM_TIMEOUT_MS,
        PUBLISH_RECONNECT_ATTEMPTS, RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_MIN_MS,
    },
    connection::{self, Backoff},
    error::BrokerError,
    health::{BrokerHealth, Probe},
    metric_names::{BROKER_RECONNECTS_TOTAL, MESSAGES_PUBLISHED_TOTAL},
    topology::{declare_topology, short},
};
use fleet_core::{Doorbell, OpRef};
use lapin::{options::BasicPublishOptions, BasicProperties, Channel, Confirmation, Connection};
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Weak,
    },
    time::Duration,
};
use tokio::sync::Mutex;
use tracing::{info, warn};

mod depth;
mod events;
mod take_dead;

pub use events::{EventMessage, EventsPublished};
pub use take_dead::{DeadLetterReader, TakenDeadLetter};

/// AMQP delivery mode 2: the broker writes the message to disk.
pub(crate) const PERSISTENT: u8 = 2;
/// Every fleet message body is JSON.
pub(crate) const CONTENT_TYPE_JSON: &str = "application/json";

/// A connection plus confirm-mode channel that reconnects after a failure (see the
/// module docs). Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Publisher {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: BrokerConfig,
    /// The connection's broker user, sent as `user_id` on intents.
    user: Option<String>,
    // tokio Mutex: held across the publish and its confirm (see the module docs).
    live: Mutex<Option<Live>>,
    probe: Probe,
    // Set by `close`: the watcher stops reconnecting (a later publish still does).
    closed: AtomicBool,
}

struct Live {
    conn: Connection,
    channel: Channel,
}

impl Live {
    fn usable(&self) -> bool {
        self.conn.status().connected() && self.channel.status().connected()
    }
}

impl Publisher {
    /// Connects, declares the topology and enables confirms. Readiness is tracked in a
    /// private [`BrokerHealth`]; use [`Publisher::connect_with_health`] to share one.
    pub async fn connect(cfg: &BrokerConfig) -> Result<Publisher, BrokerError> {
        Self::connect_with_health(cfg, &BrokerHealth::new()).await
    }

    /// Like [`Publisher::connect`], registering this publisher in `health`: it counts
    /// as connected while its connection and channel are open.
    pub async fn connect_with_health(
        cfg: &BrokerConfig,
        health: &BrokerHealth,
    ) -> Result<Publisher, BrokerError> {
        cfg.validate()?;
        let probe = health.register();
        let live = open_live(cfg).await?;
        probe.set(&live.conn, &live.channel);
        info!(broker = %cfg.log_target(), "publisher connected");
        let inner = Arc::new(Inner {
            cfg: cfg.clone(),
            user: cfg.user(),
            live: Mutex::new(Some(live)),
            probe,
            closed: AtomicBool::new(false),
        });
        tokio::spawn(watch(Arc::downgrade(&inner)));
        Ok(Publisher { inner })
    }

    /// Publishes `body` to `queue` through its entry exchange (persistent,
    /// `application/json`, `mandatory`) and waits for the broker's confirm.
    ///
    /// `Ok` means the broker took responsibility for the message. Any `Err` means it
    /// may or may not have: the caller decides (republishing is safe, messages are
    /// doorbells). A broken connection is replaced first, with
    /// [`PUBLISH_RECONNECT_ATTEMPTS`] bounded attempts.
    ///
    /// The message carries the trace of the work in progress (`fleet_runtime::trace`), if
    /// any, as its `traceparent` header.
    pub async fn publish(&self, queue: Queue, body: &[u8]) -> Result<(), BrokerError> {
        let traceparent = fleet_runtime::trace::current_header();
        self.publish_traced(queue, body, traceparent.as_deref())
            .await
    }

    /// Rings `queue`'s doorbell for the operation `op`: a bell carries no authority, the
    /// worker reads the operation from Postgres ([`Publisher::publish`]).
    pub async fn ring(&self, queue: Queue, op: OpRef<'_>) -> Result<(), BrokerError> {
        let bell = Doorbell::new(op.tenant_id, op.operation_id);
        self.publish(queue, &bell.to_bytes()).await
    }

    /// [`Publisher::publish`], the message carrying `traceparent` (the W3C trace context of
    /// the operation it is about) as its `traceparent` header.
    pub async fn publish_traced(
        &self,
        queue: Queue,
        body: &[u8],
        traceparent: Option<&str>,
    ) -> Result<(), BrokerError> {
        let inner = &self.inner;
        let (exchange, routing_key) = (
            inner.cfg.entry_exchange_name(queue),
            inner.cfg.queue_name(queue),
        );
        let mut live = inner.live.lock().await;
        let current: &Live = match &mut *live {
            Some(current) if current.usable() => current,
            slot => {
                *slot = None;
                inner.probe.clear();
                let fresh = reconnect(&inner.cfg, PUBLISH_RECONNECT_ATTEMPTS).await?;
                inner.probe.set(&fresh.conn, &fresh.channel);
                slot.insert(fresh)
            }
        };
        let mut props = crate::trace_header::with_traceparent(
            BasicProperties::default()
                .with_delivery_mode(PERSISTENT)
                .with_content_type(CONTENT_TYPE_JSON.into()),
            traceparent,
        );
        if queue == Queue::IntentsPrepare {
            // Who is speaking: the broker checks that `user_id` is this connection's user,
            // and prepare maps it to the principal the intent is submitted as.
            if let Some(user) = &inner.user {
                props = props.with_user_id(user.as_str().into());
            }
        }
        let result =
            publish_confirmed(&current.channel, &exchange, &routing_key, body, props).await;
        if result.as_ref().is_err_and(BrokerError::breaks_channel) {
            // The channel state is unknown (a late confirm could be misattributed):
            // drop the connection and start clean.
            if let Some(old) = live.take() {
                connection::close_quietly(&old.conn, "publish failed").await;
            }
            inner.probe.clear();
        }
        let outcome = if result.is_ok() {
            "confirmed"
        } else {
            "failed"
        };
        metrics::counter!(MESSAGES_PUBLISHED_TOTAL, "queue" => queue.wire_name(), "outcome" => outcome)
            .increment(1);
        result
    }

    /// Closes the connection (graceful shutdown) and stops background reconnects.
    /// A later `publish` still reconnects.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        let mut live = self.inner.live.lock().await;
        self.inner.probe.clear();
        if let Some(old) = live.take() {
            connection::close_quietly(&old.conn, "shutdown").await;
        }
    }
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("broker", &self.inner.cfg.log_target())
            .field("namespace", &self.inner.cfg.namespace)
            .finish_non_exhaustive()
    }
}

/// Replaces a dead connection while the publisher is idle. Holds only a weak
/// reference between checks, so it ends once every `Publisher` clone is dropped.
async fn watch(weak: Weak<Inner>) {
    let interval = Duration::from_millis(PUBLISHER_WATCH_INTERVAL_MS);
    let mut backoff = Backoff::new(RECONNECT_BACKOFF_MIN_MS, RECONNECT_BACKOFF_MAX_MS);
    let mut wait = interval;
    loop {
        tokio::time::sleep(wait).await;
        let Some(inner) = weak.upgrade() else { return };
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        let mut live = inner.live.lock().await;
        if live.as_ref().is_some_and(Live::usable) {
            backoff.reset();
            wait = interval;
            continue;
        }
        inner.probe.clear();
        match reconnect(&inner.cfg, 1).await {
            Ok(fresh) => {
                inner.probe.set(&fresh.conn, &fresh.channel);
                *live = Some(fresh);
                backoff.reset();
                wait = interval;
            }
            Err(err) => {
                *live = None;
                warn!(broker = %inner.cfg.log_target(), error = %err, "publisher still disconnected");
                wait = backoff.next_delay().max(interval);
            }
        }
    }
}

async fn open_live(cfg: &BrokerConfig) -> Result<Live, BrokerError> {
    let conn = connection::open(cfg, "publisher").await?;
    let channel = match connection::confirm_channel(&conn).await {
        Ok(channel) => channel,
        Err(err) => {
            connection::close_quietly(&conn, "setup failed").await;
            return Err(err);
        }
    };
    if let Err(err) = declare_topology(&channel, cfg).await {
        connection::close_quietly(&conn, "setup failed").await;
        return Err(err);
    }
    Ok(Live { conn, channel })
}

/// Up to `attempts` connection attempts with a short backoff between them.
async fn reconnect(cfg: &BrokerConfig, attempts: u32) -> Result<Live, BrokerError> {
    let mut backoff = Backoff::new(RECONNECT_BACKOFF_MIN_MS, RECONNECT_BACKOFF_MIN_MS * 4);
    let mut attempt = 1;
    loop {
        metrics::counter!(BROKER_RECONNECTS_TOTAL, "role" => "publisher").increment(1);
        match open_live(cfg).await {
            Ok(live) => {
                info!(broker = %cfg.log_target(), attempt, "publisher reconnected");
                return Ok(live);
            }
            Err(err) if err.is_permanent() || attempt >= attempts => return Err(err),
            Err(err) => {
                warn!(broker = %cfg.log_target(), attempt, error = %err, "publisher reconnect failed");
                tokio::time::sleep(backoff.next_delay()).await;
                attempt += 1;
            }
        }
    }
}

/// Publishes one `mandatory` message and waits (bounded) for its confirm. The caller
/// must not have another publish in flight on `channel` (see the module docs).
pub(crate) async fn publish_confirmed(
    channel: &Channel,
    exchange: &str,
    routing_key: &str,
    body: &[u8],
    props: BasicProperties,
) -> Result<(), BrokerError> {
    let target = if exchange.is_empty() {
        routing_key
    } else {
        exchange
    };
    let options = BasicPublishOptions {
        mandatory: true,
        immediate: false,
    };
    let pending = channel
        .basic_publish(short(exchange)?, short(routing_key)?, options, body, props)
        .await
        .map_err(BrokerError::amqp("basic.publish"))?;
    let bound = Duration::from_millis(PUBLISH_CONFIRM_TIMEOUT_MS);
    let confirmation = tokio::time::timeout(bound, pending)
        .await
        .map_err(|_| BrokerError::ConfirmTimeout {
            target: target.to_owned(),
            timeout_ms: PUBLISH_CONFIRM_TIMEOUT_MS,
        })?
        .map_err(BrokerError::amqp("publisher confirm"))?;
    match confirmation {
        Confirmation::Ack(None) => Ok(()),
        Confirmation::Ack(Some(returned)) | Confirmation::Nack(Some(returned)) => {
            Err(BrokerError::Unroutable {
                target: target.to_owned(),
                reply_code: returned.reply_code,
                reply_text: returned.reply_text.to_string(),
            })
        }
        Confirmation::Nack(None) => Err(BrokerError::Nacked {
            target: target.to_owned(),
        }),
        // Every channel we publish on is put in confirm mode when opened: a bug if not.
        Confirmation::NotRequested => Err(BrokerError::Config(
            "publisher channel is not in confirm mode".into(),
        )),
    }
}
