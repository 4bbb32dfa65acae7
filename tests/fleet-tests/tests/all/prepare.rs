//! fleet-prepare against real RabbitMQ and Postgres: idempotent by operation_id, and every
//! contract violation dead-lettered at once with its reason, with nothing written.

use std::time::Duration;

use fleet_broker::{Disposition, Queue};
use fleet_core::{parse_intent, ApprovalStatus, Status};
use fleet_prepare::{disposition, store_intent, CheckedIntent, Intake};
use fleet_store::Store;
use fleet_tests::{
    deal_update_intent, eventually_within, intent, intent_bytes, op_of, with_amount,
    with_payload_member, TestFleet, NON_LATIN_ID, SPOOFED_IDS,
};
use serde_json::json;

#[tokio::test]
async fn a_redelivered_intent_with_the_same_snapshot_is_one_row() {
    let fleet = TestFleet::with_prepare().await;
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
    fleet.submitted(&marker).await;
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT count(*) FROM operations WHERE operation_id = '{op}'"
            ))
            .await,
        1
    );
    assert_eq!(fleet.history_len(&op).await, 1);
    assert!(fleet.dead_letters(Queue::IntentsPrepare).await.is_empty());
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.status, row.approval_status),
        (Status::NotStarted, ApprovalStatus::Pending)
    );
    fleet.stop().await;
}

#[tokio::test]
async fn the_same_operation_id_with_another_amount_is_dead_lettered_as_a_conflict() {
    let fleet = TestFleet::with_prepare().await;
    let original = intent();
    let op = op_of(&original);
    fleet.submit(&original).await;
    let stored = fleet.prepared(&op).await;
    let altered = with_amount(original.clone(), json!(1_250_001));
    fleet.submit(&altered).await;
    let dead = fleet.expect_dead_letters(Queue::IntentsPrepare, 1).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].1.as_deref(), Some("operation_id_conflict"));
    assert_eq!(
        dead[0].0,
        intent_bytes(&altered),
        "the refused message is kept as sent"
    );
    let after = fleet.row(&op).await;
    assert_eq!(
        after.payload, stored.payload,
        "the original row is untouched"
    );
    assert_eq!(after.payload["amount_minor"], json!(1_250_000));
    assert_eq!(after.payload_hash, stored.payload_hash);
    fleet.stop().await;
}

#[tokio::test]
async fn bad_messages_are_dead_lettered_with_a_reason_and_write_nothing() {
    let fleet = TestFleet::with_prepare().await;
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
    let dead = fleet
        .expect_dead_letters(Queue::IntentsPrepare, cases.len() as u32)
        .await;
    for (bytes, reason) in &cases {
        let found = dead
            .iter()
            .find(|(body, _)| body == bytes)
            .unwrap_or_else(|| panic!("no dead letter for the {reason} case"));
        assert_eq!(found.1.as_deref(), Some(*reason));
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        0,
        "nothing is written for a refused message"
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM operation_events").await,
        0
    );
    fleet.stop().await;
}

#[tokio::test]
async fn ids_that_would_show_as_other_ids_are_dead_lettered_as_invalid_fields() {
    let fleet = TestFleet::with_prepare().await;
    let spoofed: Vec<Vec<u8>> = SPOOFED_IDS
        .iter()
        .map(|(member, _, value)| intent_bytes(&with_payload_member(intent(), member, value)))
        .collect();
    for bytes in &spoofed {
        fleet.submit_bytes(bytes).await;
    }
    fleet.directory_holds(NON_LATIN_ID).await;
    let greek = with_payload_member(intent(), "beneficiary_id", NON_LATIN_ID);
    fleet.submit(&greek).await;
    let dead = fleet
        .expect_dead_letters(Queue::IntentsPrepare, spoofed.len() as u32)
        .await;
    for (bytes, (_, field, value)) in spoofed.iter().zip(SPOOFED_IDS) {
        let found = dead
            .iter()
            .find(|(body, _)| body == bytes)
            .unwrap_or_else(|| panic!("no dead letter for {field} {value:?}"));
        assert_eq!(found.1.as_deref(), Some("invalid_field"), "{value:?}");
    }
    let stored = fleet.prepared(&op_of(&greek)).await;
    assert_eq!(stored.payload["beneficiary_id"], json!(NON_LATIN_ID));
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        1,
        "only the legitimate non-Latin id is stored"
    );
    fleet.stop().await;
}

/// An intent that passes the old validation but that Postgres cannot store: a NUL in the
/// free-text rationale (text and jsonb refuse U+0000).
fn poison_intent() -> serde_json::Value {
    let mut i = intent();
    i["rationale"] = json!("looks fine\u{0000}until it is stored");
    i
}

#[tokio::test]
async fn forty_poison_intents_do_not_hold_back_five_valid_ones_behind_them() {
    let fleet = TestFleet::start().await;
    let prepare = fleet.spawn_process("fleet-prepare", &[]);
    prepare.wait_for_log("consumer subscribed").await;
    let poison: Vec<_> = (0..40).map(|_| poison_intent()).collect();
    let valid: Vec<_> = (0..5).map(|_| intent()).collect();
    for i in poison.iter().chain(&valid) {
        fleet.submit(i).await;
    }
    let ids = valid
        .iter()
        .map(|i| format!("'{}'", op_of(i)))
        .collect::<Vec<_>>()
        .join(",");
    let query = format!("SELECT count(*) FROM operations WHERE operation_id IN ({ids})");
    eventually_within(
        Duration::from_secs(5),
        "the five valid intents to be prepared",
        || async { (fleet.count(&query).await == 5).then_some(()) },
    )
    .await;
    let dead = fleet.expect_dead_letters(Queue::IntentsPrepare, 40).await;
    assert_eq!(dead.len(), 40);
    assert!(
        dead.iter()
            .all(|(_, reason)| reason.as_deref() == Some("nul_character")),
        "{:?}",
        dead.iter().map(|d| &d.1).collect::<Vec<_>>()
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        5,
        "nothing is written for a poison intent"
    );
    drop(prepare);
    fleet.stop().await;
}

/// An intent past validation, needing one approver.
fn checked(intent: fleet_core::ValidIntent) -> CheckedIntent {
    CheckedIntent {
        intent,
        approvals_required: 1,
        signatures_required: 0,
        payee: None,
        risk: None,
        refunded: None,
        trace: None,
    }
}

#[tokio::test]
async fn a_value_postgres_cannot_store_is_refused_for_good_not_retried() {
    let fleet = TestFleet::start().await;
    // Validation refuses U+0000 today; build an intent past it to stand for any value a
    // future gap lets through.
    let mut slipped = parse_intent(&intent_bytes(&intent())).unwrap();
    slipped.rationale = Some("slipped past validation\u{0}".into());
    let outcome = store_intent(&fleet.store, checked(slipped)).await;
    let Intake::Refused(refusal) = &outcome else {
        panic!("expected a refusal, got {outcome:?}")
    };
    assert_eq!(refusal.reason, "database_refused");
    assert_eq!(
        disposition(&outcome),
        Disposition::dead_letter("database_refused")
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);

    // A database that cannot be reached says nothing about the intent: retried.
    let unreachable = Store::connect("postgres://postgres@127.0.0.1:1/fleet", 1).unwrap();
    let outcome = store_intent(
        &unreachable,
        checked(parse_intent(&intent_bytes(&intent())).unwrap()),
    )
    .await;
    assert!(matches!(outcome, Intake::Unavailable(_)), "{outcome:?}");
    assert_eq!(disposition(&outcome), Disposition::Retry);
    fleet.stop().await;
}

#[tokio::test]
async fn the_same_intent_stored_by_racing_intakes_is_one_row_and_never_refused() {
    // Two deliveries of one intent (a redelivery racing its first delivery, or the queue and
    // the API at once) insert the same row at the same moment. Whichever loses must learn it
    // was stored already, whatever unique index it met first.
    let fleet = TestFleet::start().await;
    for _ in 0..25 {
        let intent = parse_intent(&intent_bytes(&intent())).unwrap();
        let op = intent.operation_id.as_str().to_owned();
        let racers = (0..6).map(|_| {
            let store = fleet.store.clone();
            let intent = intent.clone();
            tokio::spawn(async move { store_intent(&store, checked(intent)).await })
        });
        let outcomes = futures_util::future::join_all(racers).await;
        let mut stored = 0;
        for outcome in outcomes {
            match outcome.unwrap() {
                Intake::Prepared(_) => stored += 1,
                Intake::AlreadyPrepared(_) => {}
                other => panic!("a racing delivery of {op} was answered {other:?}"),
            }
        }
        assert_eq!(stored, 1, "exactly one delivery stores {op}");
        assert_eq!(fleet.history_len(&op).await, 1);
    }
    fleet.stop().await;
}

#[tokio::test]
async fn doubles_survive_jsonb_so_the_stored_snapshot_hashes_to_the_approved_hash() {
    let fleet = TestFleet::start().await;
    // Postgres keeps jsonb numbers as exact decimals (1e21 comes back as
    // 1000000000000000000000, -0.0 as 0.0): the hash is taken over the double each one
    // denotes, so it must not change.
    let patch = r#"{"probability": 0.35, "score": 1e21, "big": 1.7976931348623157e308, "tiny": 5e-324,
        "third": 0.30000000000000004, "neg_zero": -0.0, "micro": 1e-7, "written_long": 0.1000000000000000055511151231257827,
        "list": [1.5e300, -2.5e-300, 123456789012345680000.0], "int": 9007199254740991, "stage": "won"}"#;
    let mut i = deal_update_intent("deal_1", 3, json!({}));
    i["payload"]["patch"] = json!("PATCH");
    let text = serde_json::to_string(&i)
        .unwrap()
        .replace("\"PATCH\"", patch);
    let intent = parse_intent(text.as_bytes()).unwrap();
    let op = intent.operation_id.as_str().to_owned();
    let approved_hash = intent.payload_hash.clone();
    assert!(matches!(
        store_intent(&fleet.store, checked(intent)).await,
        Intake::Prepared(_)
    ));
    let row = fleet.row(&op).await;
    assert_eq!(row.payload_hash, approved_hash.as_str());
    assert_eq!(
        row.snapshot().hash(),
        approved_hash,
        "the stored snapshot hashes as it did before it was stored"
    );
    let stored_text: String = fleet
        .sql()
        .await
        .query_one(
            "SELECT payload::text FROM operations WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        stored_text.contains("1000000000000000000000"),
        "Postgres did rewrite the digits: {stored_text}"
    );
    fleet.stop().await;
}

/// What the store keeps of a prepared operation, its history and its outbox, with its id
/// and hash written as `OP` and `HASH` and without its times.
async fn stored_shape(fleet: &TestFleet, op: &str, hash: &str) -> String {
    let sql = fleet.sql().await;
    let row = sql
        .query_one(
            "SELECT jsonb_build_array(
                 to_jsonb(o) - '{created_at,updated_at,approval_expires_at}'::text[],
                 (SELECT jsonb_agg(to_jsonb(e) - '{id,at}'::text[] ORDER BY e.id)
                  FROM operation_events e WHERE e.operation_id = o.operation_id AND e.tenant_id = o.tenant_id),
                 (SELECT jsonb_agg(to_jsonb(x) - '{id,history_id,occurred_at}'::text[]
                                   || jsonb_build_object('data', x.data - '{created_at,updated_at,approval_expires_at}'::text[])
                                   ORDER BY x.id)
                  FROM operation_outbox x WHERE x.operation_id = o.operation_id AND x.tenant_id = o.tenant_id),
                 (approval_expires_at - created_at)::text)::text
             FROM operations o WHERE o.operation_id = $1",
            &[&op],
        )
        .await
        .unwrap();
    row.get::<_, String>(0)
        .replace(op, "OP")
        .replace(hash, "HASH")
}

#[tokio::test]
async fn a_batch_of_intents_is_one_statement_that_stores_each_as_alone_with_its_own_outcome() {
    use fleet_store::{PrepareOutcome, Requirement};
    let fleet = TestFleet::start().await;
    let valid = |i: &serde_json::Value| parse_intent(&intent_bytes(i)).unwrap();
    // Stored alone first: the reference, and an id the batch then repeats.
    let (alone, before) = (valid(&intent()), valid(&intent()));
    for v in [&alone, &before] {
        let stored = fleet.store.insert_prepared(v, 2, Some("agent-a")).await;
        assert_eq!(stored.unwrap(), PrepareOutcome::Inserted);
    }
    let (a, b) = (valid(&intent()), valid(&intent()));
    let mut other_snapshot = with_amount(intent(), json!(77_700));
    other_snapshot["operation_id"] = json!(b.operation_id.as_str());
    let conflicting = valid(&other_snapshot);
    let required = || Requirement::from(2);
    // Out of id order; `b` twice (the second a repeat), `b` once more with another
    // snapshot, and an id stored before.
    let items = vec![
        (&b, required(), Some("agent-a")),
        (&before, required(), Some("agent-a")),
        (&a, required(), Some("agent-a")),
        (&b, required(), Some("agent-a")),
        (&conflicting, required(), Some("agent-a")),
    ];
    let outcomes = fleet.store.insert_prepared_many(&items).await.unwrap();
    assert_eq!(outcomes[0], PrepareOutcome::Inserted);
    assert_eq!(outcomes[1], PrepareOutcome::AlreadyPrepared);
    assert_eq!(outcomes[2], PrepareOutcome::Inserted);
    assert_eq!(outcomes[3], PrepareOutcome::AlreadyPrepared);
    assert!(
        matches!(&outcomes[4], PrepareOutcome::Conflict { stored_hash } if stored_hash == b.payload_hash.as_str()),
        "{:?}",
        outcomes[4]
    );
    for v in [&a, &b, &before] {
        assert_eq!(fleet.history_len(v.operation_id.as_str()).await, 1);
    }
    // Each stored exactly as the one-row statement stores an intent alone: the row, its
    // `prepared` history row and its outbox event.
    let shape = |v: &fleet_core::ValidIntent| {
        let (op, hash) = (
            v.operation_id.as_str().to_owned(),
            v.payload_hash.as_str().to_owned(),
        );
        let fleet = &fleet;
        async move { stored_shape(fleet, &op, &hash).await }
    };
    let reference = shape(&alone).await;
    assert!(reference.contains("\"prepared\""), "{reference}");
    for v in [&a, &b] {
        assert_eq!(shape(v).await, reference);
    }
    fleet.stop().await;
}
