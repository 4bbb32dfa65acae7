//! Batch approval through the real fleet-api: one signature over the list of operation
//! hashes, their count and their sum per currency approves exactly the listed operations,
//! each once, and no other; a batch whose count or totals are not those of its operations
//! records nothing; and the database refuses a batch approval of an operation the batch
//! does not list, whoever writes it.

use chrono::{Duration, Utc};
use fleet_broker::Queue;
use fleet_core::batch_approval::{BatchItem, BatchStatement};
use fleet_core::{Role, Status};
use fleet_store::DbRole;
use fleet_tests::{answer_of, hash_of, intent, op_of, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

fn batch_of(intents: &[Value]) -> BatchStatement {
    let items = intents
        .iter()
        .map(|i| BatchItem {
            operation_id: op_of(i),
            payload_hash: hash_of(i),
            amount: Some((
                i["payload"]["amount_minor"].as_i64().unwrap(),
                i["payload"]["currency"].as_str().unwrap().to_owned(),
            )),
        })
        .collect();
    BatchStatement::new(
        format!("ab_{}", ulid::Ulid::new()),
        TENANT.to_owned(),
        items,
        Utc::now() + Duration::hours(1),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_twenty_signed_once_approves_those_twenty_and_no_other() {
    let mut fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let key = fleet.register_key("alice").await;
    fleet.spawn_execute();
    // 21 payments to the same payee.
    let mut intents = Vec::new();
    for k in 0..21 {
        let mut i = intent();
        i["payload"]["invoice_id"] = json!(format!("inv_b{k}"));
        i["payload"]["amount_minor"] = json!(100_000 + k);
        api.submitted(&fleet.http, &agent, &i).await;
        intents.push(i);
    }
    let (twenty, last) = intents.split_at(20);
    let batch = batch_of(twenty);
    let body = |statement: Value, bytes: &[u8]| {
        json!({
            "statement": statement,
            "key_id": key.public_key().key_id().as_str(),
            "signature": key.sign(bytes).to_text(),
        })
    };
    // Totals that are not the operations' are refused, whoever signed them: nothing is
    // recorded.
    let mut lying = batch.to_json();
    lying["totals"] = json!({"KZT": 1});
    let bytes = fleet_core::canonical_json(&lying).into_bytes();
    let response = api
        .post(
            &fleet.http,
            &alice,
            "/v1/approvals/batch",
            &body(lying, &bytes),
        )
        .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(fleet.count("SELECT count(*) FROM approvals").await, 0);
    // The batch as it is: one signature.
    let response = api
        .post(
            &fleet.http,
            &alice,
            "/v1/approvals/batch",
            &body(batch.to_json(), &batch.to_bytes()),
        )
        .await;
    let status = response.status();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["operations"].as_array().unwrap().len(), 20);
    assert!(answer["operations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["approval_status"] == "approved"));
    for i in twenty {
        fleet.reaches(&op_of(i), Status::Succeeded).await;
    }
    let counted = fleet
        .count(&format!(
            "SELECT count(*) FROM approvals WHERE batch_id = '{}'",
            batch.batch_id
        ))
        .await;
    assert_eq!(counted, 20, "one approval per listed operation");
    // The 21st, to the same payee, is not approved: rung, it still waits.
    let op21 = op_of(&last[0]);
    fleet.ring_execute(&op21).await;
    fleet.drained(Queue::OperationsExecute).await;
    fleet.still_pending(&op21).await;
    assert_eq!(fleet.sim_posts(&op21).await, 0);
    // Nobody can slip it into the batch: an approval naming the batch for an operation it
    // does not list is refused by the database, even the owner's.
    let sql = fleet.sql().await;
    let slip = format!(
        "INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, batch_id)
         VALUES ('{op21}', '{TENANT}', 'alice', 'token', '{}', '{}')",
        hash_of(&last[0]),
        batch.batch_id
    );
    let (code, constraint) = answer_of(sql.execute(slip.as_str(), &[]).await);
    assert_eq!(
        (code.as_str(), constraint.as_deref()),
        ("23514", Some("approvals_of_their_batch"))
    );
    // And no component role writes a batch itself.
    for role in DbRole::ALL {
        let client = fleet.connect_as(role).await;
        let forged = format!(
            "INSERT INTO approval_batches (batch_id, tenant_id, principal, statement, batch_hash, key_id, signature, expires_at)
             SELECT 'ab_{}', tenant_id, principal, statement, batch_hash, key_id, signature, expires_at
             FROM approval_batches WHERE batch_id = '{}'",
            ulid::Ulid::new(),
            batch.batch_id
        );
        let (code, _) = answer_of(client.execute(forged.as_str(), &[]).await);
        assert_eq!(code, "42501", "{}", role.name());
    }
    fleet.still_pending(&op21).await;
    // `fleetctl approve --batch` does the same from the approver's machine: two more, and
    // the 21st, in one signature.
    let more: Vec<Value> = (0..2)
        .map(|k| {
            let mut i = intent();
            i["payload"]["invoice_id"] = json!(format!("inv_c{k}"));
            i
        })
        .collect();
    for i in &more {
        api.submitted(&fleet.http, &agent, i).await;
    }
    let key_path = std::env::temp_dir().join(format!("fleet-batch-{}.key", ulid::Ulid::new()));
    fleetctl::key::write_private(&key_path, &key).unwrap();
    let ops = format!("{},{},{op21}", op_of(&more[0]), op_of(&more[1]));
    let out = api
        .fleetctl_as(
            &alice,
            &[],
            &[
                "approve",
                "--batch",
                &ops,
                "--key",
                key_path.to_str().unwrap(),
            ],
        )
        .await;
    std::fs::remove_file(&key_path).ok();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("3 operations, 3 approved"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for op in [op_of(&more[0]), op_of(&more[1]), op21] {
        fleet.reaches(&op, Status::Succeeded).await;
    }
    drop(api);
    fleet.stop().await;
}
