//! The consumer loop against a real broker: settlement only after the handler returned,
//! dead-lettering with a reason, retries parked outside the consumer and bounded, the
//! concurrency bound, resubscription after the broker dropped us, and shutdown.

mod common;

use common::{eventually, fresh_config, in_namespace, kill_connections, raw_channel, DEADLINE};
use fleet_broker::{
    consume, consume_with_health, dead_letter_count, dead_letters,
    lapin::options::QueueDeleteOptions, message_count, BrokerHealth, Delivery, Disposition,
    Handler, Publisher, Queue,
};
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, Mutex,
};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

const Q: Queue = Queue::OperationsExecute;

/// What a handler saw of one delivery.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    body: Vec<u8>,
    redelivered: bool,
    delivery_count: u32,
    retries: u32,
}

impl Seen {
    fn of(d: &Delivery<'_>) -> Self {
        Seen {
            body: d.body.to_vec(),
            redelivered: d.redelivered,
            delivery_count: d.delivery_count,
            retries: d.retries,
        }
    }
}

/// Records every delivery and answers with the scripted disposition for its index
/// (the last one repeats).
struct Scripted {
    seen: Mutex<Vec<Seen>>,
    script: Vec<Disposition>,
}

impl Scripted {
    fn new(script: Vec<Disposition>) -> Arc<Self> {
        Arc::new(Scripted {
            seen: Mutex::new(Vec::new()),
            script,
        })
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Handler for Scripted {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        let mut seen = self.seen.lock().unwrap();
        seen.push(Seen::of(&delivery));
        let i = (seen.len() - 1).min(self.script.len() - 1);
        self.script[i].clone()
    }
}

/// Signals that it started, then holds the delivery until released.
struct Holding {
    started: Notify,
    release: Notify,
    returned: AtomicUsize,
}

impl Handler for Holding {
    async fn handle(&self, _delivery: Delivery<'_>) -> Disposition {
        self.started.notify_one();
        self.release.notified().await;
        self.returned.fetch_add(1, Ordering::SeqCst);
        Disposition::Ack
    }
}

async fn stop(
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), fleet_broker::BrokerError>>,
) {
    shutdown.cancel();
    tokio::time::timeout(DEADLINE, task)
        .await
        .expect("consume returns after shutdown")
        .expect("consume task did not panic")
        .expect("consume returned Ok");
}

/// A consumer of [`Q`] running `handler` at most `concurrency` at a time, waited for
/// until it is connected.
struct Running {
    health: BrokerHealth,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), fleet_broker::BrokerError>>,
}

impl Running {
    async fn start<H: Handler>(
        cfg: &fleet_broker::BrokerConfig,
        handler: Arc<H>,
        concurrency: usize,
    ) -> Running {
        let health = BrokerHealth::new();
        let shutdown = CancellationToken::new();
        let task = {
            let (cfg, health, shutdown) = (cfg.clone(), health.clone(), shutdown.clone());
            tokio::spawn(async move {
                consume_with_health(cfg, Q, handler, concurrency, shutdown, &health).await
            })
        };
        eventually("the consumer is ready", || async { health.is_connected() }).await;
        Running {
            health,
            shutdown,
            task,
        }
    }

    async fn stop(self) {
        stop(self.shutdown, self.task).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_is_acked_only_after_the_handler_returned() {
    in_namespace(fresh_config(), |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        publisher.publish(Q, b"{\"n\":1}").await.expect("publish");

        // A consumer whose handler never returns, then crashes (task aborted).
        let holding = Arc::new(Holding {
            started: Notify::new(),
            release: Notify::new(),
            returned: AtomicUsize::new(0),
        });
        let crashed = tokio::spawn(consume(
            cfg.clone(),
            Q,
            holding.clone(),
            1,
            CancellationToken::new(),
        ));
        tokio::time::timeout(DEADLINE, holding.started.notified())
            .await
            .expect("handler started");
        assert_eq!(
            message_count(&cfg, Q).await.unwrap(),
            0,
            "delivered, so not ready"
        );
        crashed.abort();
        let _ = crashed.await;
        assert_eq!(holding.returned.load(Ordering::SeqCst), 0);

        // Never acked: the broker gives it back.
        eventually("the unacked message is requeued", || async {
            message_count(&cfg, Q).await.unwrap() == 1
        })
        .await;

        // A healthy consumer gets it again, flagged as redelivered, and acks it.
        let handler = Scripted::new(vec![Disposition::Ack]);
        let consumer = Running::start(&cfg, handler.clone(), 1).await;
        eventually("the redelivery is handled", || async {
            !handler.seen().is_empty()
        })
        .await;
        consumer.stop().await;

        let seen = handler.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].body, b"{\"n\":1}");
        assert!(seen[0].redelivered);
        // Acked: closing the consumer did not requeue it.
        assert_eq!(message_count(&cfg, Q).await.unwrap(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letter_moves_the_body_with_its_reason_and_empties_the_work_queue() {
    in_namespace(fresh_config(), |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        publisher.publish(Q, b"not json").await.expect("publish");

        let handler = Scripted::new(vec![Disposition::dead_letter("malformed")]);
        let consumer = Running::start(&cfg, handler.clone(), 4).await;
        eventually("the message reaches the dead-letter queue", || async {
            dead_letter_count(&cfg, Q).await.unwrap() == 1
        })
        .await;
        consumer.stop().await;

        assert_eq!(
            handler.seen().len(),
            1,
            "dead-lettered at once, no requeue loop"
        );
        assert_eq!(
            message_count(&cfg, Q).await.unwrap(),
            0,
            "the original was acked"
        );
        let dead = dead_letters(&cfg, Q).await.expect("drain");
        assert_eq!(
            dead,
            vec![(b"not json".to_vec(), Some("malformed".to_owned()))]
        );
        assert_eq!(dead_letter_count(&cfg, Q).await.unwrap(), 0, "drained");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_is_parked_and_comes_back_counted_as_retried() {
    in_namespace(fresh_config(), |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        publisher.publish(Q, b"{\"n\":2}").await.expect("publish");

        let handler = Scripted::new(vec![Disposition::Retry, Disposition::Ack]);
        let consumer = Running::start(&cfg, handler.clone(), 1).await;
        eventually("the message is handled twice", || async {
            handler.seen().len() >= 2
        })
        .await;
        consumer.stop().await;

        let seen = handler.seen();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0].retries, 0, "{seen:?}");
        // The original was acked once its parked copy was confirmed: the copy is a new
        // message (not a redelivery) that carries its retry count.
        assert_eq!(seen[1].body, seen[0].body);
        assert_eq!(seen[1].retries, 1, "{seen:?}");
        assert_eq!(
            (seen[1].redelivered, seen[1].delivery_count),
            (false, 0),
            "{seen:?}"
        );
        assert_eq!(message_count(&cfg, Q).await.unwrap(), 0);
        assert_eq!(dead_letter_count(&cfg, Q).await.unwrap(), 0);
    })
    .await;
}

/// Blocks every delivery on a semaphore and records the peak number running at once.
struct Gated {
    gate: Semaphore,
    active: AtomicUsize,
    peak: AtomicUsize,
    started: AtomicUsize,
    done: AtomicUsize,
}

impl Handler for Gated {
    async fn handle(&self, _delivery: Delivery<'_>) -> Disposition {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.gate.acquire().await.expect("gate open").forget();
        self.active.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        Disposition::Ack
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_more_than_concurrency_handlers_run_at_once() {
    in_namespace(fresh_config(), |cfg| async move {
        const MESSAGES: usize = 8;
        const CONCURRENCY: usize = 2;
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        for i in 0..MESSAGES {
            publisher
                .publish(Q, format!("{{\"n\":{i}}}").as_bytes())
                .await
                .expect("publish");
        }
        let gated = Arc::new(Gated {
            gate: Semaphore::new(0),
            active: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        });
        let consumer = Running::start(&cfg, gated.clone(), CONCURRENCY).await;

        eventually("the first handlers start", || async {
            gated.started.load(Ordering::SeqCst) >= CONCURRENCY
        })
        .await;
        // All eight were prefetched, yet no third handler may start while two hold.
        let _ = message_count(&cfg, Q).await.unwrap();
        assert_eq!(gated.started.load(Ordering::SeqCst), CONCURRENCY);
        gated.gate.add_permits(MESSAGES);
        eventually("all messages are handled", || async {
            gated.done.load(Ordering::SeqCst) == MESSAGES
        })
        .await;
        consumer.stop().await;

        assert_eq!(gated.peak.load(Ordering::SeqCst), CONCURRENCY);
        assert_eq!(message_count(&cfg, Q).await.unwrap(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn consume_stops_on_shutdown_and_reports_readiness() {
    in_namespace(fresh_config(), |cfg| async move {
        let health = BrokerHealth::new();
        let shutdown = CancellationToken::new();
        let task = {
            let (cfg, health, shutdown) = (cfg.clone(), health.clone(), shutdown.clone());
            tokio::spawn(async move {
                consume_with_health(
                    cfg,
                    Q,
                    Scripted::new(vec![Disposition::Ack]),
                    1,
                    shutdown,
                    &health,
                )
                .await
            })
        };
        eventually("the consumer is ready", || async { health.is_connected() }).await;
        stop(shutdown, task).await;
        assert!(!health.is_connected(), "a stopped consumer is not ready");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_consumer_resubscribes_after_the_broker_cancelled_it() {
    in_namespace(fresh_config(), |cfg| async move {
        let handler = Scripted::new(vec![Disposition::Ack]);
        let consumer = Running::start(&cfg, handler.clone(), 1).await;

        // Deleting the queue makes the broker cancel our subscription (basic.cancel).
        let (conn, channel) = raw_channel(&cfg).await;
        channel
            .queue_delete(
                cfg.queue_name(Q).as_str().into(),
                QueueDeleteOptions::default(),
            )
            .await
            .expect("delete queue");
        conn.close(200, "OK".into()).await.ok();

        // The consumer re-declares the topology and subscribes again. Wait for its queue to
        // exist before connecting a publisher, whose own declaration would otherwise race
        // the broker's cancel notification and re-create the queue under the old consumer.
        eventually("the consumer re-declared its queue", || async {
            fleet_broker::message_count(&cfg, Q).await.is_ok()
        })
        .await;
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        eventually(
            "a message published after the resubscription is handled",
            || async {
                if handler.seen().is_empty() {
                    // Until the queue is back the publish is unroutable; that is an error.
                    let _ = publisher.publish(Q, b"{\"after\":true}").await;
                    tokio::task::yield_now().await;
                }
                !handler.seen().is_empty()
            },
        )
        .await;
        consumer.stop().await;
        assert_eq!(handler.seen()[0].body, b"{\"after\":true}");
    })
    .await;
}

// A broker restart or a network cut, in miniature: the broker drops the consumer's connection.
#[tokio::test(flavor = "multi_thread")]
async fn the_consumer_reconnects_after_its_connection_is_killed() {
    in_namespace(fresh_config(), |cfg| async move {
        let handler = Scripted::new(vec![Disposition::Ack]);
        let consumer = Running::start(&cfg, handler.clone(), 1).await;
        let Some(killed) = kill_connections(&cfg, "consumer").await else {
            eprintln!("SKIPPED: rabbitmqctl is not available to kill connections");
            consumer.stop().await;
            return;
        };
        assert_eq!(killed, 1);
        eventually("readiness drops", || async {
            !consumer.health.is_connected()
        })
        .await;
        eventually("the consumer is ready again", || async {
            consumer.health.is_connected()
        })
        .await;

        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        publisher.publish(Q, b"{\"n\":3}").await.expect("publish");
        eventually("the message is handled on the new connection", || async {
            !handler.seen().is_empty()
        })
        .await;
        consumer.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_lettering_heals_after_the_dead_letter_exchange_was_deleted() {
    in_namespace(fresh_config(), |cfg| async move {
        let handler = Scripted::new(vec![Disposition::dead_letter("malformed")]);
        let consumer = Running::start(&cfg, handler.clone(), 1).await;

        // Someone deletes the DLX (and with it the dead-letter bindings). The message is
        // published raw: a `Publisher` would re-declare the topology and hide the damage.
        let (conn, channel) = raw_channel(&cfg).await;
        channel
            .exchange_delete(
                cfg.dead_letter_exchange_name().as_str().into(),
                fleet_broker::lapin::options::ExchangeDeleteOptions::default(),
            )
            .await
            .expect("delete exchange");
        channel
            .basic_publish(
                "".into(),
                cfg.queue_name(Q).as_str().into(),
                Default::default(),
                b"{{{",
                Default::default(),
            )
            .await
            .expect("publish");
        conn.close(200, "OK".into()).await.ok();

        // The first dead-letter publish fails; the message is requeued (not lost), the
        // session is rebuilt, the declare restores the DLX, the retry dead-letters it.
        eventually("the message reaches the dead-letter queue", || async {
            dead_letter_count(&cfg, Q).await.unwrap() == 1
        })
        .await;
        consumer.stop().await;
        assert!(handler.seen().len() >= 2, "handled again after the failure");
        assert_eq!(message_count(&cfg, Q).await.unwrap(), 0);
        let dead = dead_letters(&cfg, Q).await.expect("drain");
        assert_eq!(dead, vec![(b"{{{".to_vec(), Some("malformed".to_owned()))]);
    })
    .await;
}

/// Fails transiently on every body starting with `poison`, acks the rest, and records
/// when each good one arrived.
struct PoisonFails {
    good: Mutex<Vec<Vec<u8>>>,
    poison_tries: AtomicUsize,
}

impl Handler for PoisonFails {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        if delivery.body.starts_with(b"poison") {
            self.poison_tries.fetch_add(1, Ordering::SeqCst);
            Disposition::Retry
        } else {
            self.good.lock().unwrap().push(delivery.body.to_vec());
            Disposition::Ack
        }
    }
}

// A message that keeps failing waits for its next try outside the consumer: it holds no
// handler slot and no prefetch slot, so messages behind it are not held back.
#[tokio::test(flavor = "multi_thread")]
async fn messages_that_keep_failing_do_not_hold_back_the_ones_behind_them() {
    in_namespace(fresh_config(), |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        for i in 0..40 {
            publisher
                .publish(Q, format!("poison {i}").as_bytes())
                .await
                .expect("publish");
        }
        for i in 0..5 {
            publisher
                .publish(Q, format!("good {i}").as_bytes())
                .await
                .expect("publish");
        }
        let handler = Arc::new(PoisonFails {
            good: Mutex::new(Vec::new()),
            poison_tries: AtomicUsize::new(0),
        });
        let shutdown = CancellationToken::new();
        let started = tokio::time::Instant::now();
        let task = tokio::spawn(consume(
            cfg.clone(),
            Q,
            handler.clone(),
            4,
            shutdown.clone(),
        ));
        eventually("the five good messages to be handled", || async {
            handler.good.lock().unwrap().len() == 5
        })
        .await;
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(2),
            "the good messages waited {took:?} behind the failing ones"
        );
        stop(shutdown, task).await;
    })
    .await;
}

// A message that fails on every try is dead-lettered once its retries are used up, with
// a reason, instead of cycling for ever.
#[tokio::test(flavor = "multi_thread")]
async fn a_message_that_always_fails_is_dead_lettered_after_its_retries() {
    let mut cfg = fresh_config();
    cfg.retry_limit = 2;
    in_namespace(cfg, |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        publisher
            .publish(Q, b"{\"always\":\"fails\"}")
            .await
            .expect("publish");
        let handler = Scripted::new(vec![Disposition::Retry]);
        let consumer = Running::start(&cfg, handler.clone(), 2).await;
        eventually("the message reaches the dead-letter queue", || async {
            dead_letter_count(&cfg, Q).await.unwrap() == 1
        })
        .await;
        consumer.stop().await;
        let tries: Vec<u32> = handler.seen().iter().map(|s| s.retries).collect();
        assert_eq!(tries, [0, 1, 2], "the first try and two retries");
        assert_eq!(
            dead_letters(&cfg, Q).await.expect("drain"),
            vec![(
                b"{\"always\":\"fails\"}".to_vec(),
                Some("retries_exhausted".to_owned())
            )]
        );
        assert_eq!(message_count(&cfg, Q).await.unwrap(), 0);
    })
    .await;
}
