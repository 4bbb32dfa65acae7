//! What the fleet keeps of a provider's answers: the allow-listed summary (ids, status,
//! money, error codes), never the customer data a provider echoes. The simulator's
//! payments carry an account holder's name and a description, as a real provider's do.

use fleet_core::Status;
use fleet_tests::{at, intent, TestFleet};
use serde_json::{json, Value};

/// Submits an intent, approves it with execute running, and waits for `status`.
async fn executed(intent: Value, status: Status) -> (TestFleet, String) {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let op = fleet.submit_and_approve(&intent).await;
    fleet.reaches(&op, status).await;
    (fleet, op)
}

/// Every stored row about the operation, as text: its row, its attempts, its events.
async fn stored_text(fleet: &TestFleet, op: &str) -> Vec<String> {
    let sql = fleet.sql().await;
    let mut texts = Vec::new();
    for table in ["operations", "attempts", "operation_events"] {
        let q = format!("SELECT row_to_json(t)::text FROM {table} t WHERE operation_id = $1");
        texts.extend(
            sql.query(q.as_str(), &[&op])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<_, String>(0)),
        );
    }
    texts
}

#[tokio::test]
async fn a_payment_answer_carrying_customer_data_leaves_none_of_it_in_attempts_or_operations() {
    let (fleet, op) = executed(intent(), Status::Succeeded).await;
    let row = fleet.row(&op).await;
    let payment_id = row.external_id.clone().unwrap();

    // The provider's answer did carry customer data.
    let answer = fleet
        .sim_api_get(&format!("/v1/payments/{payment_id}"))
        .await;
    let name = answer["beneficiary_name"]
        .as_str()
        .expect("the simulator echoes a name")
        .to_owned();
    let description = answer["description"]
        .as_str()
        .expect("the simulator echoes a description")
        .to_owned();

    // What is kept: the summary, in the attempt and as the operation's result.
    let kept = json!({"id": payment_id, "status": "succeeded", "amount_minor": 1_250_000, "currency": "KZT", "reference": row.idempotency_key});
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].response.as_ref(), Some(&kept));
    assert_eq!(row.result.as_ref(), Some(&kept));

    // What is not: anywhere in the operation's rows.
    for text in stored_text(&fleet, &op).await {
        for leaked in [
            name.as_str(),
            description.as_str(),
            "beneficiary_name",
            "description",
        ] {
            assert!(!text.contains(leaked), "{leaked:?} stored in {text}");
        }
    }
    fleet.stop().await;
}

#[tokio::test]
async fn a_rejected_payment_keeps_the_error_type_and_code() {
    let mut closed = intent();
    closed["payload"]["beneficiary_id"] = json!("closed_vendor_77");
    let (fleet, op) = executed(closed, Status::Failed).await;
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    let kept = json!({"error": {"type": "payment_rejected", "code": "account_closed"}});
    assert_eq!(attempts[0].response.as_ref(), Some(&kept));
    assert_eq!(attempts[0].detail.as_deref(), Some("account_closed"));
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.error_code.as_deref(), row.result.as_ref()),
        (Some("account_closed"), Some(&kept))
    );
    fleet.stop().await;
}
