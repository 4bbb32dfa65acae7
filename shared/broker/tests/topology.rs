//! The topology is declared idempotently and the broker really holds quorum queues with
//! the configured delivery limit, dead-lettering to the fleet DLX.

mod common;

use common::{eventually, fresh_config, in_namespace, raw_channel};
use fleet_broker::{
    consume, dead_letters, declare_topology, ensure_topology,
    lapin::{
        self,
        options::QueueDeclareOptions,
        types::{AMQPValue, FieldTable},
    },
    message_count, retry_queue_arguments, work_queue_arguments, BrokerError, Delivery, Disposition,
    Handler, Publisher, Queue, TopologyMode,
};
use std::{sync::Arc, time::Duration};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Re-declares `name` with `args` on a fresh channel (a refusal closes the channel).
async fn redeclare(conn: &lapin::Connection, name: &str, args: FieldTable) -> lapin::Result<()> {
    let channel = conn.create_channel().await?;
    channel
        .queue_declare(name.into(), QueueDeclareOptions::durable(), args)
        .await
        .map(|_| ())
}

fn is_precondition_failed(err: &lapin::Error) -> bool {
    err.to_string().contains("PRECONDITION_FAILED")
}

#[tokio::test(flavor = "multi_thread")]
async fn declaring_twice_is_idempotent_and_queues_are_quorum_with_delivery_limit() {
    in_namespace(fresh_config(), |cfg| async move {
        let (conn, channel) = raw_channel(&cfg).await;
        declare_topology(&channel, &cfg)
            .await
            .expect("first declare");
        declare_topology(&channel, &cfg)
            .await
            .expect("second declare is a no-op");

        // Everything exists: the passive declares of the verifying mode find every
        // exchange and queue.
        let verify = cfg.clone().with_topology(TopologyMode::Verify);
        declare_topology(&channel, &verify)
            .await
            .expect("every exchange and queue exists");

        // The broker stored our arguments: the same ones are accepted, any change is refused.
        for q in Queue::ALL {
            let name = cfg.retry_queue_name(q);
            redeclare(&conn, &name, retry_queue_arguments(&cfg, q))
                .await
                .expect("same retry queue args accepted");
            let mut at_most_once = retry_queue_arguments(&cfg, q);
            at_most_once.insert(
                "x-dead-letter-strategy".into(),
                AMQPValue::LongString("at-most-once".into()),
            );
            let err = redeclare(&conn, &name, at_most_once)
                .await
                .expect_err("the retry queue dead-letters at least once");
            assert!(is_precondition_failed(&err), "{err}");
        }
        for q in Queue::ALL {
            let name = cfg.queue_name(q);
            redeclare(&conn, &name, work_queue_arguments(&cfg, q))
                .await
                .expect("same args accepted");

            let mut other_limit = work_queue_arguments(&cfg, q);
            other_limit.insert(
                "x-delivery-limit".into(),
                AMQPValue::LongLongInt(i64::from(cfg.delivery_limit) + 1),
            );
            let err = redeclare(&conn, &name, other_limit)
                .await
                .expect_err("delivery limit is stored");
            assert!(is_precondition_failed(&err), "{err}");

            let mut classic = work_queue_arguments(&cfg, q);
            classic.insert(
                "x-queue-type".into(),
                AMQPValue::LongString("classic".into()),
            );
            let err = redeclare(&conn, &name, classic)
                .await
                .expect_err("queue type is quorum");
            assert!(is_precondition_failed(&err), "{err}");
        }
        for q in Queue::ALL {
            let mut classic = FieldTable::default();
            classic.insert(
                "x-queue-type".into(),
                AMQPValue::LongString("classic".into()),
            );
            let err = redeclare(&conn, &cfg.dead_letter_queue_name(q), classic)
                .await
                .expect_err("dead-letter queue is quorum");
            assert!(is_precondition_failed(&err), "{err}");
        }

        // A binary built with another delivery limit is told so, as a permanent error.
        let mut drifted = cfg.clone();
        drifted.delivery_limit += 5;
        let fresh = conn.create_channel().await.expect("channel");
        let err = declare_topology(&fresh, &drifted)
            .await
            .expect_err("mismatch detected");
        assert!(matches!(err, BrokerError::TopologyMismatch { .. }), "{err}");
        assert!(err.is_permanent());
        conn.close(200, "OK".into()).await.ok();
    })
    .await;
}

/// Takes a delivery and never settles it, as a handler whose process crashes would.
struct NeverSettles {
    started: Notify,
}

impl Handler for NeverSettles {
    async fn handle(&self, _delivery: Delivery<'_>) -> Disposition {
        self.started.notify_one();
        std::future::pending().await
    }
}

// A message whose handling never settles (its consumer
// dies every time) is dead-lettered by the broker once x-delivery-limit is exceeded, so
// it is never dropped and never cycles for ever.
#[tokio::test(flavor = "multi_thread")]
async fn the_delivery_limit_dead_letters_a_message_whose_consumer_keeps_dying() {
    let mut cfg = fresh_config();
    cfg.delivery_limit = 2;
    in_namespace(cfg, |cfg| async move {
        let publisher = fleet_broker::Publisher::connect(&cfg)
            .await
            .expect("publisher");
        publisher
            .publish(Queue::OperationsExecute, b"{\"poison\":true}")
            .await
            .expect("publish");

        let mut crashes = 0;
        while fleet_broker::dead_letter_count(&cfg, Queue::OperationsExecute)
            .await
            .expect("count")
            == 0
        {
            assert!(
                crashes <= 5,
                "still not dead-lettered after {crashes} crashes"
            );
            let handler = Arc::new(NeverSettles {
                started: Notify::new(),
            });
            let consumer = tokio::spawn(consume(
                cfg.clone(),
                Queue::OperationsExecute,
                handler.clone(),
                1,
                CancellationToken::new(),
            ));
            // Either the consumer takes the message (then it dies holding it), or the
            // broker has just dead-lettered it and there is nothing to take.
            let took =
                tokio::time::timeout(Duration::from_secs(3), handler.started.notified()).await;
            consumer.abort();
            let _ = consumer.await;
            crashes += usize::from(took.is_ok());
            if took.is_ok() {
                eventually("the broker takes the message back", || async {
                    let ready = message_count(&cfg, Queue::OperationsExecute).await.unwrap();
                    let dead = fleet_broker::dead_letter_count(&cfg, Queue::OperationsExecute)
                        .await
                        .unwrap();
                    ready + dead == 1
                })
                .await;
            }
        }
        assert_eq!(crashes, 3, "delivered delivery_limit + 1 times");
        assert_eq!(
            dead_letters(&cfg, Queue::OperationsExecute)
                .await
                .expect("drain"),
            vec![(
                b"{\"poison\":true}".to_vec(),
                Some("broker:delivery_limit".to_owned())
            )]
        );
        assert_eq!(
            message_count(&cfg, Queue::OperationsExecute)
                .await
                .expect("count"),
            0
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_mode_declares_nothing_and_passes_once_an_admin_declared_the_topology() {
    in_namespace(fresh_config(), |cfg| async move {
        let verify = cfg.clone().with_topology(TopologyMode::Verify);
        let err = Publisher::connect(&verify)
            .await
            .expect_err("nothing to verify yet");
        assert!(err.to_string().contains("NOT_FOUND"), "{err}");
        let (conn, channel) = raw_channel(&cfg).await;
        let still_missing = channel
            .queue_declare(
                cfg.queue_name(Queue::IntentsPrepare).as_str().into(),
                QueueDeclareOptions::durable().passive(),
                FieldTable::default(),
            )
            .await;
        assert!(still_missing.is_err(), "verify mode created a queue");
        conn.close(200, "OK".into()).await.ok();

        ensure_topology(&cfg).await.expect("the admin declares");
        let publisher = Publisher::connect(&verify)
            .await
            .expect("verified once declared");
        // Published through the queue's own entry exchange, it lands on the queue.
        publisher
            .publish(Queue::IntentsPrepare, b"{}")
            .await
            .expect("routed through fleet.to.intents.prepare");
        eventually("the message to land", || async {
            message_count(&cfg, Queue::IntentsPrepare).await.unwrap() == 1
        })
        .await;
        publisher.close().await;
    })
    .await;
}
