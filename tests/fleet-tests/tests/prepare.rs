//! fleet-prepare against real RabbitMQ and Postgres: idempotent by operation_id, and every
//! contract violation dead-lettered at once with its reason, with nothing written.

use fleet_broker::Queue;
use fleet_tests::{intent, intent_bytes, op_of, with_amount, TestFleet};
use serde_json::json;

#[tokio::test]
async fn a_redelivered_intent_with_the_same_snapshot_is_one_row() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let i = intent();
    let op = op_of(&i);
    fleet.submit(&i).await;
    fleet.submit(&i).await;
    // Same snapshot, another rationale: still the same operation (rationale is not hashed).
    let mut reworded = i.clone();
    reworded["rationale"] = json!("reworded");
    fleet.submit(&reworded).await;
    // A marker intent after them: once it is stored, the three before it were handled.
    let marker = intent();
    fleet.submit(&marker).await;
    fleet.prepared(&op_of(&marker)).await;
    assert_eq!(fleet.count(&format!("SELECT count(*) FROM operations WHERE operation_id = '{op}'")).await, 1);
    assert_eq!(fleet.count(&format!("SELECT count(*) FROM operation_events WHERE operation_id = '{op}'")).await, 1);
    assert!(fleet.dead_letters(Queue::IntentsPrepare).await.is_empty());
    let row = fleet.store.get(&op).await.unwrap().unwrap();
    assert_eq!((row.status.as_str(), row.approval_status.as_str()), ("not_started", "pending"));
    fleet.stop().await;
}

#[tokio::test]
async fn the_same_operation_id_with_another_amount_is_dead_lettered_as_a_conflict() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let original = intent();
    let op = op_of(&original);
    fleet.submit(&original).await;
    let stored = fleet.prepared(&op).await;
    let altered = with_amount(original.clone(), json!(1_250_001));
    fleet.submit(&altered).await;
    let dead = fleet.expect_dead_letters(Queue::IntentsPrepare, 1).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].1.as_deref(), Some("operation_id_conflict"));
    assert_eq!(dead[0].0, intent_bytes(&altered), "the refused message is kept as sent");
    let after = fleet.store.get(&op).await.unwrap().unwrap();
    assert_eq!(after.payload, stored.payload, "the original row is untouched");
    assert_eq!(after.payload["amount_minor"], json!(1_250_000));
    assert_eq!(after.payload_hash, stored.payload_hash);
    fleet.stop().await;
}

#[tokio::test]
async fn bad_messages_are_dead_lettered_with_a_reason_and_write_nothing() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let float_amount = with_amount(intent(), json!(12500.5));
    let mut unknown_action = intent();
    unknown_action["action"] = json!("payment.delete");
    let mut huge = intent();
    huge["rationale"] = json!("x".repeat(100 * 1024));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{\"schema\": \"intent.v1\", ".to_vec(), "malformed"),
        (intent_bytes(&float_amount), "invalid_field"),
        (intent_bytes(&unknown_action), "unknown_action"),
        (intent_bytes(&huge), "oversized"),
    ];
    for (bytes, _) in &cases {
        fleet.submit_bytes(bytes).await;
    }
    let dead = fleet.expect_dead_letters(Queue::IntentsPrepare, cases.len() as u32).await;
    for (bytes, reason) in &cases {
        let found = dead.iter().find(|(body, _)| body == bytes).unwrap_or_else(|| panic!("no dead letter for the {reason} case"));
        assert_eq!(found.1.as_deref(), Some(*reason));
    }
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0, "nothing is written for a refused message");
    assert_eq!(fleet.count("SELECT count(*) FROM operation_events").await, 0);
    fleet.stop().await;
}
