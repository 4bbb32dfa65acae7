//! The queue door knows who is speaking. An agent principal gets a broker user of its own
//! from the real `fleetctl principal add … --broker`; the broker checks each message's
//! `user_id` against the publishing user, and fleet-prepare (a real process, refusing
//! anonymous intents as it does by default) maps it to the principal: the tenant grant is
//! checked, `submitted_by` is recorded, and a sender no principal speaks as is
//! dead-lettered `unknown_submitter`. The same user may follow only its own tenants'
//! outcome events, on queues of its own.

use super::broker_users::refused;
use fleet_broker::lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, QueueBindOptions, QueueDeclareOptions,
};
use fleet_broker::lapin::types::{AMQPValue, FieldTable};
use fleet_broker::lapin::{self, BasicProperties, Connection, ConnectionProperties};
use fleet_broker::{dead_letters, BrokerConfig, Publisher, Queue, TopologyMode, SENDER_HEADER};
use fleet_tests::{intent, op_of, TestFleet, TENANT};
use serde_json::Value;

/// An agent principal with its own broker user, as an administrator makes one.
struct Agent {
    name: String,
    user: String,
    url: String,
}

impl Agent {
    async fn add(fleet: &TestFleet, suffix: &str, tenants: &[&str]) -> Agent {
        // Broker users are the broker's, not the namespace's: the name is unique per test.
        let name = format!("{}-{suffix}", fleet.broker.namespace);
        let mut args = vec!["principal", "add", "--name", &name, "--role", "agent"];
        for t in tenants {
            args.extend(["--tenant", t]);
        }
        args.push("--broker");
        let out = fleet.fleetctl(&args).await;
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        let password = printed
            .lines()
            .find_map(|l| l.strip_prefix("broker password (shown once): "))
            .unwrap_or_else(|| panic!("no password printed: {printed}"))
            .to_owned();
        let user = format!("fleet-agent.{name}");
        assert!(
            printed.contains(&format!("broker user {user}")),
            "{printed}"
        );
        let (_, rest) = fleet.broker.amqp_url.rsplit_once('@').unwrap();
        let url = format!("amqp://{user}:{password}@{rest}");
        Agent { name, user, url }
    }

    fn broker(&self, fleet: &TestFleet) -> BrokerConfig {
        let mut cfg = fleet.broker.clone().with_topology(TopologyMode::Verify);
        cfg.amqp_url = self.url.clone();
        cfg
    }

    /// Publishes as this agent, through fleet's own publisher (which sends `user_id`).
    async fn submit(&self, fleet: &TestFleet, intent: &Value) {
        let publisher = Publisher::connect(&self.broker(fleet)).await.unwrap();
        publisher
            .publish(Queue::IntentsPrepare, &serde_json::to_vec(intent).unwrap())
            .await
            .expect("the agent's user may publish intents");
        publisher.close().await;
    }

    async fn remove(self, fleet: &TestFleet) {
        let out = fleet.fleetctl(&["principal", "remove", &self.name]).await;
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            printed.contains(&format!("broker user {} deleted", self.user)),
            "{printed}"
        );
    }
}

/// The dead-letter reasons of `intents.prepare`, waiting until there are `n`.
async fn dead_lettered(fleet: &TestFleet, n: usize) -> Vec<String> {
    let mut reasons = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while reasons.len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {reasons:?} dead-lettered"
        );
        for (_, reason) in dead_letters(&fleet.broker, Queue::IntentsPrepare)
            .await
            .unwrap()
        {
            reasons.push(reason.unwrap_or_default());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    reasons
}

/// Publishes `intent` as the fleet's admin user with `props` (confirm, mandatory).
async fn publish_raw(fleet: &TestFleet, intent: &Value, props: BasicProperties) {
    let conn = Connection::connect(&fleet.broker.amqp_url, ConnectionProperties::default())
        .await
        .unwrap();
    let channel = conn.create_channel().await.unwrap();
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    let confirm = channel
        .basic_publish(
            fleet
                .broker
                .entry_exchange_name(Queue::IntentsPrepare)
                .as_str()
                .into(),
            fleet
                .broker
                .queue_name(Queue::IntentsPrepare)
                .as_str()
                .into(),
            BasicPublishOptions {
                mandatory: true,
                immediate: false,
            },
            &serde_json::to_vec(intent).unwrap(),
            props,
        )
        .await
        .unwrap()
        .await
        .unwrap();
    assert!(confirm.is_ack());
    let _ = conn.close(200, "done".into()).await;
}

/// Who submitted operation `op` of [`TENANT`].
async fn submitted_by(fleet: &TestFleet, op: &str) -> Option<String> {
    let sql = "SELECT submitted_by FROM operations WHERE operation_id = $1 AND tenant_id = $2";
    of_operation(fleet, sql, op, TENANT).await
}

/// Whether the intent's tenant holds an operation with its id.
async fn stored(fleet: &TestFleet, intent: &Value) -> bool {
    let sql = "SELECT count(*) FROM operations WHERE operation_id = $1 AND tenant_id = $2";
    let tenant = intent["tenant_id"].as_str().unwrap();
    of_operation::<i64>(fleet, sql, &op_of(intent), tenant).await == 1
}

/// The first column of the one row `sql` selects for the operation `op` of `tenant`
/// (`$1` and `$2`), read as the fleet's store reads.
async fn of_operation<T: tokio_postgres::types::FromSqlOwned>(
    fleet: &TestFleet,
    sql: &str,
    op: &str,
    tenant: &str,
) -> T {
    let session = fleet.store.pooled_session().await.unwrap();
    session
        .query_one(sql, &[&op, &tenant])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn prepare_maps_the_validated_broker_user_to_its_principal_and_refuses_the_rest() {
    let fleet = TestFleet::start().await;
    let prepare = fleet.spawn_process("fleet-prepare", &[("PREPARE_ANONYMOUS_INTENTS", "refuse")]);
    prepare.wait_for_log("consumer subscribed").await;
    let bot = Agent::add(&fleet, "bot", &["org_482"]).await;
    let other = Agent::add(&fleet, "other", &["org_482"]).await;
    let listed = fleet.fleetctl(&["principal", "list"]).await;
    assert!(String::from_utf8_lossy(&listed.stdout)
        .lines()
        .any(|l| l.starts_with(&bot.name) && l.contains(&bot.user)));

    // Its own tenant: prepared, and recorded as submitted by the principal.
    let mine = intent();
    let op = op_of(&mine);
    bot.submit(&fleet, &mine).await;
    fleet.prepared(&op).await;
    assert_eq!(
        submitted_by(&fleet, &op).await.as_deref(),
        Some(bot.name.as_str())
    );

    // A tenant it was not granted: dead-lettered, nothing written.
    let mut foreign = intent();
    foreign["tenant_id"] = "globex".into();
    bot.submit(&fleet, &foreign).await;
    assert_eq!(dead_lettered(&fleet, 1).await, ["tenant_not_granted"]);
    assert!(!stored(&fleet, &foreign).await);

    // The shared admin user, which no principal speaks as (its `user_id` is `guest`).
    let anonymous = intent();
    fleet.submit(&anonymous).await;
    // No `user_id` at all, and a forged sender header: the header counts only on a
    // message back from the fleet's own retry queue, never on one from the entry exchange.
    let forged = intent();
    let mut headers = FieldTable::default();
    headers.insert(
        SENDER_HEADER.into(),
        AMQPValue::LongString(bot.user.as_bytes().to_vec().into()),
    );
    publish_raw(
        &fleet,
        &forged,
        BasicProperties::default().with_headers(headers),
    )
    .await;
    assert_eq!(
        dead_lettered(&fleet, 2).await,
        ["unknown_submitter", "unknown_submitter"]
    );
    assert!(!stored(&fleet, &anonymous).await);
    assert!(!stored(&fleet, &forged).await);

    // Maker-checker holds on the queue: only the submitter replaces its operation.
    let mut replaced_by_other = intent();
    replaced_by_other["supersedes"] = op.clone().into();
    other.submit(&fleet, &replaced_by_other).await;
    assert_eq!(dead_lettered(&fleet, 1).await, ["supersedes_forbidden"]);
    let mut replaced = intent();
    replaced["supersedes"] = op.clone().into();
    bot.submit(&fleet, &replaced).await;
    fleet.prepared(&op_of(&replaced)).await;

    // A redelivery of a stored intent stays a no-op: nothing more is dead-lettered.
    bot.submit(&fleet, &mine).await;
    prepare
        .wait_for_log("same snapshot prepared before; nothing to do")
        .await;
    assert_eq!(
        dead_letters(&fleet.broker, Queue::IntentsPrepare)
            .await
            .unwrap()
            .len(),
        0
    );

    // Removing the principal deletes its broker user: it can no longer log in.
    let url = bot.url.clone();
    bot.remove(&fleet).await;
    other.remove(&fleet).await;
    assert!(Connection::connect(&url, ConnectionProperties::default())
        .await
        .is_err());
    drop(prepare);
    fleet.stop().await;
}

/// Declares `queue` and binds it to the events exchange with `key`, as `url`'s user, on a
/// connection of its own.
async fn declare_and_bind(
    url: &str,
    queue: &str,
    exchange: &str,
    key: &str,
) -> Result<(), lapin::Error> {
    let conn = Connection::connect(url, ConnectionProperties::default())
        .await
        .expect("the agent logs in");
    let channel = conn.create_channel().await.unwrap();
    let result = async {
        channel
            .queue_declare(
                queue.into(),
                // Exclusive: gone with the connection, whatever the test finds.
                QueueDeclareOptions {
                    exclusive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await?;
        channel
            .queue_bind(
                queue.into(),
                exchange.into(),
                key.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
    }
    .await;
    let _ = conn.close(200, "done".into()).await;
    result
}

#[tokio::test]
async fn an_agents_broker_user_binds_only_its_own_tenants_events_on_queues_of_its_own() {
    let fleet = TestFleet::start().await;
    let bot = Agent::add(&fleet, "events", &["org_482", "acme.kz"]).await;
    let events = fleet.broker.events_exchange_name();
    let own = |q: &str| format!("{}.events.{}/{q}", fleet.broker.namespace, bot.name);

    for (queue, key, allowed) in [
        (own("a"), "fleet.operation.*.org_482".to_owned(), true),
        (
            own("b"),
            "fleet.operation.succeeded.acme%2Ekz".to_owned(),
            true,
        ),
        (own("c"), "#".to_owned(), false),
        (own("d"), "fleet.operation.*.*".to_owned(), false),
        (own("e"), "fleet.operation.*.globex".to_owned(), false),
        (
            format!("{}.events.someone-else/x", fleet.broker.namespace),
            "fleet.operation.*.org_482".to_owned(),
            false,
        ),
        (
            "amq.gen-mine".to_owned(),
            "fleet.operation.*.org_482".to_owned(),
            false,
        ),
    ] {
        let result = declare_and_bind(&bot.url, &queue, &events, &key).await;
        match result {
            Ok(()) => assert!(allowed, "{queue} bound with {key}: should be refused"),
            Err(e) => {
                assert!(!allowed, "{queue} bound with {key}: refused ({e})");
                assert!(refused(&e), "{queue} with {key}: {e}");
            }
        }
    }
    bot.remove(&fleet).await;
    fleet.stop().await;
}
