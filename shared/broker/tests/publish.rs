//! Publishing with confirms: persistent JSON messages, unroutable ones reported as
//! errors, and a reconnect on the next call after the connection was lost.

mod common;

use common::{eventually, fresh_config, in_namespace, kill_connections, raw_channel};
use fleet_broker::{
    lapin::options::{BasicAckOptions, BasicGetOptions, QueueDeleteOptions},
    message_count, BrokerError, BrokerHealth, Publisher, Queue,
};

#[tokio::test(flavor = "multi_thread")]
async fn a_confirmed_publish_is_a_persistent_json_message_in_the_work_queue() {
    in_namespace(fresh_config(), |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        publisher
            .publish(Queue::IntentsPrepare, b"{\"v\":1}")
            .await
            .expect("publish");
        assert_eq!(message_count(&cfg, Queue::IntentsPrepare).await.unwrap(), 1);

        let (conn, channel) = raw_channel(&cfg).await;
        let got = channel
            .basic_get(
                cfg.queue_name(Queue::IntentsPrepare).as_str().into(),
                BasicGetOptions::default(),
            )
            .await
            .expect("basic.get")
            .expect("a message");
        assert_eq!(got.delivery.data, b"{\"v\":1}");
        assert_eq!(*got.delivery.properties.delivery_mode(), Some(2));
        assert_eq!(
            got.delivery
                .properties
                .content_type()
                .as_ref()
                .map(|c| c.as_str()),
            Some("application/json")
        );
        assert!(got
            .delivery
            .acker
            .ack(BasicAckOptions::default())
            .await
            .expect("ack"));
        conn.close(200, "OK".into()).await.ok();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unroutable_publish_is_an_error_and_the_publisher_stays_usable() {
    in_namespace(fresh_config(), |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        let (conn, channel) = raw_channel(&cfg).await;
        channel
            .queue_delete(
                cfg.queue_name(Queue::WebhooksIngest).as_str().into(),
                QueueDeleteOptions::default(),
            )
            .await
            .expect("delete queue");
        conn.close(200, "OK".into()).await.ok();

        let err = publisher
            .publish(Queue::WebhooksIngest, b"{}")
            .await
            .expect_err("no queue, no route");
        assert!(
            matches!(
                err,
                BrokerError::Unroutable {
                    reply_code: 312,
                    ..
                }
            ),
            "{err}"
        );
        publisher
            .publish(Queue::OperationsReconcile, b"{}")
            .await
            .expect("other queues still work");
        assert_eq!(
            message_count(&cfg, Queue::OperationsReconcile)
                .await
                .unwrap(),
            1
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_publish_right_after_the_connection_died_reconnects_first() {
    in_namespace(fresh_config(), |cfg| async move {
        let publisher = Publisher::connect(&cfg).await.expect("publisher");
        let Some(killed) = kill_connections(&cfg, "publisher").await else {
            eprintln!("SKIPPED: rabbitmqctl is not available to kill connections");
            return;
        };
        assert_eq!(killed, 1);
        // Whether the watcher or this call replaces the connection, the publish lands
        // (at worst one attempt fails while the death is still being noticed).
        let first = publisher
            .publish(Queue::OperationsExecute, b"{\"n\":1}")
            .await;
        if first.is_err() {
            publisher
                .publish(Queue::OperationsExecute, b"{\"n\":1}")
                .await
                .expect("second attempt reconnects");
        }
        assert_eq!(
            message_count(&cfg, Queue::OperationsExecute).await.unwrap(),
            1
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_publisher_reconnects_by_itself_and_reports_readiness() {
    in_namespace(fresh_config(), |cfg| async move {
        let health = BrokerHealth::new();
        let publisher = Publisher::connect_with_health(&cfg, &health)
            .await
            .expect("publisher");
        assert!(health.is_connected());
        let Some(killed) = kill_connections(&cfg, "publisher").await else {
            eprintln!("SKIPPED: rabbitmqctl is not available to kill connections");
            return;
        };
        assert_eq!(killed, 1);
        eventually("readiness drops with the connection", || async {
            !health.is_connected()
        })
        .await;

        publisher
            .publish(Queue::OperationsExecute, b"{}")
            .await
            .expect("reconnects and publishes");
        assert!(health.is_connected());
        assert_eq!(
            message_count(&cfg, Queue::OperationsExecute).await.unwrap(),
            1
        );

        publisher.close().await;
        assert!(!health.is_connected());
    })
    .await;
}
