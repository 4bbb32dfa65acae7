//! Every component's broker user, made by `fleetctl broker setup`, may do exactly what
//! the component needs: the broker refuses the rest with ACCESS_REFUSED. And the fleet
//! runs with those users, each worker a real process holding only its own credentials.

use fleet_broker::lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions, QueueDeleteOptions,
};
use fleet_broker::lapin::protocol::{AMQPErrorKind, AMQPSoftError};
use fleet_broker::lapin::types::FieldTable;
use fleet_broker::lapin::{self, BasicProperties, Connection, ConnectionProperties};
use fleet_broker::permissions::Role;
use fleet_broker::{Publisher, Queue};
use fleet_core::Status;
use fleet_tests::{free_addr, hash_of, intent, op_of, SignedDelivery, TestFleet, WEBHOOK_SECRET};
use reqwest::StatusCode;
use serde_json::json;

/// Whether the broker refused the operation for want of a permission (ACCESS_REFUSED).
pub(crate) fn refused(e: &lapin::Error) -> bool {
    matches!(e.kind(), lapin::ErrorKind::ProtocolError(p) if matches!(p.kind(), AMQPErrorKind::Soft(AMQPSoftError::ACCESSREFUSED)))
}

/// Runs one AMQP operation as the user of `url`, on a channel of its own.
async fn as_user<T>(
    url: &str,
    operation: impl AsyncFnOnce(&lapin::Channel) -> Result<T, lapin::Error>,
) -> Result<T, lapin::Error> {
    let conn = Connection::connect(url, ConnectionProperties::default())
        .await
        .expect("the user logs in");
    let channel = conn.create_channel().await.expect("channel");
    let result = operation(&channel).await;
    let _ = conn.close(200, "done".into()).await;
    result
}

/// Publishes one message with a confirm; `Ok` only if the broker took it.
async fn publish(url: &str, exchange: &str, routing_key: &str) -> Result<(), lapin::Error> {
    as_user(url, async |channel| {
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        let options = BasicPublishOptions {
            mandatory: true,
            immediate: false,
        };
        let confirm = channel
            .basic_publish(
                exchange.into(),
                routing_key.into(),
                options,
                b"{}",
                BasicProperties::default(),
            )
            .await?
            .await?;
        assert!(
            confirm.is_ack() && confirm.take_message().is_none(),
            "{exchange}: the broker did not route it"
        );
        Ok(())
    })
    .await
}

async fn consume(url: &str, queue: &str) -> Result<(), lapin::Error> {
    as_user(url, async |channel| {
        channel
            .basic_consume(
                queue.into(),
                "probe".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map(|_| ())
    })
    .await
}

async fn delete(url: &str, queue: &str) -> Result<(), lapin::Error> {
    as_user(url, async |channel| {
        channel
            .queue_delete(queue.into(), QueueDeleteOptions::default())
            .await
            .map(|_| ())
    })
    .await
}

/// `Ok` when `allowed`, ACCESS_REFUSED otherwise.
fn expect(result: Result<(), lapin::Error>, allowed: bool, what: &str) {
    match result {
        Ok(()) => assert!(allowed, "{what}: allowed, but should be refused"),
        Err(e) => {
            assert!(!allowed, "{what}: refused, but should be allowed: {e}");
            assert!(refused(&e), "{what}: {e}");
        }
    }
}

#[tokio::test]
async fn each_components_user_may_publish_and_consume_only_what_it_needs_and_configure_nothing() {
    let fleet = TestFleet::start().await;
    let users = fleet.create_broker_users().await;
    let b = &fleet.broker;

    // The headline: an agent cannot put anything on webhooks.ingest; the receiver can.
    let agent = users.amqp_url(Role::Agent);
    let webhooks = (
        b.entry_exchange_name(Queue::WebhooksIngest),
        b.queue_name(Queue::WebhooksIngest),
    );
    let e = publish(&agent, &webhooks.0, &webhooks.1).await.unwrap_err();
    assert!(refused(&e), "{e}");
    let e = publish(&agent, "", &webhooks.1).await.unwrap_err();
    assert!(
        refused(&e),
        "the default exchange, which reaches every queue, is refused too: {e}"
    );
    let agent_publisher = Publisher::connect(&users.config(Role::Agent))
        .await
        .expect("the agent connects and verifies the topology");
    assert!(agent_publisher
        .publish(Queue::WebhooksIngest, b"{}")
        .await
        .is_err());
    let receiver = Publisher::connect(&users.config(Role::WebhookIngest))
        .await
        .expect("the receiver connects");
    receiver
        .publish(Queue::WebhooksIngest, b"{}")
        .await
        .expect("the receiver publishes to webhooks.ingest");
    agent_publisher.close().await;
    receiver.close().await;

    // The whole matrix: publish to each queue, consume each queue, delete one.
    for role in Role::ALL {
        let url = users.amqp_url(role);
        for q in Queue::ALL {
            let what = format!("{role} publishing to {q}");
            expect(
                publish(&url, &b.entry_exchange_name(q), &b.queue_name(q)).await,
                role.publishes().contains(&q),
                &what,
            );
            expect(
                consume(&url, &b.queue_name(q)).await,
                role.consumes() == Some(q),
                &format!("{role} consuming {q}"),
            );
            // Only the relay reads dead letters (it keeps them in Postgres).
            expect(
                consume(&url, &b.dead_letter_queue_name(q)).await,
                role == Role::Relay,
                &format!("{role} consuming {q}'s dead letters"),
            );
        }
        expect(
            publish(&url, "", &b.queue_name(Queue::IntentsPrepare)).await,
            false,
            &format!("{role} on the default exchange"),
        );
        let own = role.consumes().unwrap_or(Queue::IntentsPrepare);
        expect(
            delete(&url, &b.queue_name(own)).await,
            false,
            &format!("{role} deleting {own}"),
        );
    }
    // Only what was allowed landed: one message per role that rings each queue (plus the
    // receiver's publish above on webhooks.ingest).
    for q in Queue::ALL {
        let ringers = Role::ALL
            .iter()
            .filter(|r| r.publishes().contains(&q))
            .count() as u32;
        let extra = u32::from(q == Queue::WebhooksIngest);
        assert_eq!(
            fleet_broker::message_count(b, q).await.unwrap(),
            ringers + extra,
            "{q}"
        );
    }
    users.remove().await;
    fleet.stop().await;
}

#[tokio::test]
async fn the_fleet_runs_with_each_worker_holding_only_its_own_broker_user() {
    let fleet = TestFleet::start().await;
    let users = fleet.create_broker_users().await;
    let webhook_addr = free_addr();
    let worker = |binary: &str, role: Role, extra: &[(&'static str, String)]| {
        let mut env = users.env(role);
        env.extend_from_slice(extra);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        fleet.spawn_process(binary, &env)
    };
    let workers = [
        worker("fleet-prepare", Role::Prepare, &[]),
        worker("fleet-execute", Role::Execute, &[]),
        worker("fleet-reconcile", Role::Reconcile, &[]),
        worker(
            "fleet-webhook-ingest",
            Role::WebhookIngest,
            &[
                ("WEBHOOK_SECRETS", WEBHOOK_SECRET.into()),
                ("WEBHOOK_ADDR", webhook_addr.clone()),
            ],
        ),
    ];
    for w in &workers {
        w.wait_for_log("consumer subscribed").await;
    }

    // The agent submits, an approver approves, the provider answers `pending`, and its
    // signed webhook settles the payment: every hop with the hop's own user.
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "pending"}))
        .await;
    let intent = intent();
    let op = op_of(&intent);
    let agent = Publisher::connect(&users.config(Role::Agent))
        .await
        .unwrap();
    agent
        .publish(Queue::IntentsPrepare, &serde_json::to_vec(&intent).unwrap())
        .await
        .expect("the agent submits");
    fleet.prepared(&op).await;
    // An approver approves over the API, which rings execute with its own broker user.
    let api = fleet
        .spawn_api(
            &users
                .env(Role::Api)
                .iter()
                .map(|(k, v)| (*k, v.as_str()))
                .collect::<Vec<_>>(),
        )
        .await;
    let approver = fleet
        .token("alice", fleet_core::Role::Approver, &["org_482"])
        .await;
    let approved = api
        .post(
            &fleet.http,
            &approver,
            &format!("/v1/operations/{op}/approve"),
            &json!({"payload_hash": hash_of(&intent)}),
        )
        .await;
    assert_eq!(approved.status(), StatusCode::OK);
    fleet.reaches(&op, Status::Accepted).await;
    let mut payment = fleet.sim_payment(&op).await;
    payment["status"] = json!("succeeded");
    let delivery = SignedDelivery::event("evt_least_privilege", "payment.succeeded", &payment);
    assert_eq!(
        delivery
            .post(
                &fleet.http,
                &format!("http://{webhook_addr}/webhooks/payments")
            )
            .await,
        StatusCode::NO_CONTENT
    );
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), payment["id"].as_str());
    assert_eq!(
        (fleet.sim_posts(&op).await, fleet.sim_effects(&op).await),
        (1, 1)
    );
    // And the agent's user still cannot reach the webhook queue.
    assert!(agent
        .publish(Queue::WebhooksIngest, &delivery.envelope("payments"))
        .await
        .is_err());
    agent.close().await;
    drop((workers, api));
    users.remove().await;
    fleet.stop().await;
}
