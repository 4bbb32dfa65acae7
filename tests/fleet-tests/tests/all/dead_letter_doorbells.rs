//! Replaying a dead-lettered doorbell, through the real `fleet-execute`, `fleet-relay` and
//! `fleet-api` processes. A bell is only a reminder to look at a row: replayed, it is
//! rung again on its queue and the row decides what happens. An approved payment whose
//! bell was dead-lettered (as fleet-execute does after its last retry) is paid once by a
//! replay; a second copy of the same bell replayed after the payment pays nothing more;
//! a body that is not a doorbell is refused (`replay_not_supported`) and stays listed.

use fleet_broker::lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use fleet_broker::lapin::types::{AMQPValue, FieldTable, LongString};
use fleet_broker::lapin::{BasicProperties, Connection, ConnectionProperties};
use fleet_broker::{Queue, QUEUE_HEADER, REASON_HEADER, RETRIES_EXHAUSTED};
use fleet_core::{Doorbell, Role, Status};
use fleet_tests::{eventually, hash_of, intent, ApiProcess, TestFleet, TENANT};
use reqwest::StatusCode;
use serde_json::{json, Value};

const POLLING: &[(&str, &str)] = &[("API_RATE_PER_S", "1000"), ("API_RATE_BURST", "1000")];

/// Puts `body` on the execute queue's dead-letter queue exactly as fleet-execute's
/// dead-letterer does when a bell failed on every retry: through the dead-letter
/// exchange, routed by the work queue's name, with the reason and queue headers.
async fn dead_letter_execute_bell(fleet: &TestFleet, body: &[u8]) {
    let conn = Connection::connect(&fleet.broker.amqp_url, ConnectionProperties::default())
        .await
        .expect("broker connection");
    let channel = conn.create_channel().await.expect("channel");
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirm mode");
    let mut headers = FieldTable::default();
    headers.insert(
        REASON_HEADER.into(),
        AMQPValue::LongString(LongString::from(RETRIES_EXHAUSTED)),
    );
    headers.insert(
        QUEUE_HEADER.into(),
        AMQPValue::LongString(LongString::from(Queue::OperationsExecute.wire_name())),
    );
    let confirm = channel
        .basic_publish(
            fleet.broker.dead_letter_exchange_name().as_str().into(),
            fleet
                .broker
                .queue_name(Queue::OperationsExecute)
                .as_str()
                .into(),
            BasicPublishOptions::default(),
            body,
            // Every fleet publisher names its message (a new id per publish), and the
            // relay keeps a dead letter once per id.
            BasicProperties::default()
                .with_message_id(format!("msg_{}", ulid::Ulid::new()).into())
                .with_delivery_mode(2)
                .with_headers(headers),
        )
        .await
        .expect("published")
        .await
        .expect("confirmed");
    assert!(confirm.is_ack(), "the broker took the dead letter");
    let _ = conn.close(200, "done".into()).await;
}

/// The execute queue's dead letters the API lists, once there are `n` unresolved.
async fn execute_dead_letters(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    n: usize,
) -> Vec<Value> {
    eventually(&format!("{n} execute dead letters listed"), || async {
        let (status, page) = api
            .get(
                &fleet.http,
                token,
                "/v1/dead-letters?queue=operations.execute",
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let data = page["data"].as_array().unwrap().clone();
        (data.len() == n).then_some(data)
    })
    .await
}

async fn replay(fleet: &TestFleet, api: &ApiProcess, token: &str, id: i64) -> (StatusCode, Value) {
    let r = api
        .post(
            &fleet.http,
            token,
            &format!("/v1/dead-letters/{id}/replay"),
            &json!({}),
        )
        .await;
    (r.status(), r.json().await.unwrap())
}

#[tokio::test]
async fn a_dead_lettered_bell_replayed_pays_its_approved_payment_once_and_a_second_copy_nothing() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    // Listings are polled while the relay moves dead letters: room for the polling.
    let api = fleet.spawn_api(POLLING).await;
    let _relay = fleet.spawn_process("fleet-relay", &[]);
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let ops = fleet.token("night-ops", Role::Operator, &[TENANT]).await;

    // Approved, but its bell never reached fleet-execute: it was dead-lettered instead.
    let i = intent();
    let op = fleet.submitted(&i).await;
    fleet.approve_without_ringing(&op, &hash_of(&i)).await;
    let bell = Doorbell::new(TENANT, &op).to_bytes();
    dead_letter_execute_bell(&fleet, &bell).await;
    let listed = execute_dead_letters(&fleet, &api, &ops, 1).await;
    assert_eq!(listed[0]["reason"], RETRIES_EXHAUSTED, "{listed:?}");
    assert_eq!(listed[0]["tenant_id"], TENANT, "{listed:?}");
    assert_eq!(
        fleet.row(&op).await.status,
        Status::NotStarted,
        "nothing rang it"
    );
    assert_eq!(fleet.sim_effects(&op).await, 0);

    let (status, out) = replay(&fleet, &api, &ops, listed[0]["id"].as_i64().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["outcome"], "rung", "{out}");
    assert_eq!(out["dead_letter"]["resolution"], "replayed", "{out}");
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_effects(&op).await, 1, "paid once");
    execute_dead_letters(&fleet, &api, &ops, 0).await;

    // The same bell dead-lettered again and replayed after the payment: the row says
    // there is nothing to do, so nothing more is paid.
    dead_letter_execute_bell(&fleet, &bell).await;
    let listed = execute_dead_letters(&fleet, &api, &ops, 1).await;
    let (status, out) = replay(&fleet, &api, &ops, listed[0]["id"].as_i64().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["outcome"], "rung", "{out}");
    // A later bell, rung after the replayed one, paid: fleet-execute has taken both.
    let canary = fleet.submit_and_approve(&intent()).await;
    fleet.reaches(&canary, Status::Succeeded).await;
    assert_eq!(fleet.row(&op).await.status, Status::Succeeded);
    assert_eq!(
        fleet.sim_posts(&op).await,
        1,
        "one request to the provider in all"
    );
    assert_eq!(fleet.sim_effects(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_dead_letter_on_the_execute_queue_that_is_no_bell_is_refused_and_stays() {
    let fleet = TestFleet::start().await;
    // Listings are polled while the relay moves dead letters: room for the polling.
    let api = fleet.spawn_api(POLLING).await;
    let _relay = fleet.spawn_process("fleet-relay", &[]);
    let ops = fleet.token("night-ops", Role::Operator, &[TENANT]).await;

    dead_letter_execute_bell(&fleet, br#"{"not":"a bell"}"#).await;
    let listed = execute_dead_letters(&fleet, &api, &ops, 1).await;
    let id = listed[0]["id"].as_i64().unwrap();
    let (status, problem) = replay(&fleet, &api, &ops, id).await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    assert_eq!(problem["code"], "replay_not_supported", "{problem}");
    // Still there, unresolved, for a person to discard.
    let listed = execute_dead_letters(&fleet, &api, &ops, 1).await;
    assert_eq!(listed[0]["id"], id);
    assert!(listed[0]["resolution"].is_null(), "{listed:?}");
    fleet.stop().await;
}
