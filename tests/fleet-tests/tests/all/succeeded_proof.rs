//! Receipts only with the provider's proof, held by the database whoever writes
//! (0069_evidence.sql): no role makes an operation `succeeded` without a confirmation
//! in the move's history row that names the provider's object and what proved it — not
//! by writing the status, not with an object id, not with a forged confirmation that no
//! attempt, lookup or provider event backs. A real payment's success carries its
//! confirmation in the view the API and the events show.

use fleet_core::Status;
use fleet_store::DbRole;
use fleet_tests::status_guard::writes_status;
use fleet_tests::{intent, TestFleet};

const UNPROVEN: &str = "23514 operations_succeeded_with_proof";

/// What the database answers to `statements` run in order in one transaction, rolled
/// back: "ok" or the first refusal's SQLSTATE and constraint.
async fn answer_to(client: &mut tokio_postgres::Client, statements: &[String]) -> String {
    let tx = client.transaction().await.unwrap();
    let mut answer = "ok".to_owned();
    for s in statements {
        if let Err(e) = tx.batch_execute(s).await {
            answer = match e.as_db_error() {
                Some(db) => format!(
                    "{} {}",
                    db.code().code(),
                    db.constraint().unwrap_or_default()
                ),
                None => e.to_string(),
            };
            break;
        }
    }
    tx.rollback().await.unwrap();
    answer
}

/// The attempts at a success without proof a role taken over could write, each after
/// moving the row to in_progress as a claim would.
fn forgeries(op: &str) -> Vec<(&'static str, Vec<String>)> {
    let claim = format!("UPDATE operations SET status = 'in_progress' WHERE operation_id = '{op}'");
    let succeed = |set: &str| {
        format!("UPDATE operations SET status = 'succeeded'{set} WHERE operation_id = '{op}'")
    };
    let with_history = |confirmed: &str| {
        format!(
            "WITH moved AS (UPDATE operations SET status = 'succeeded', external_id = 'pay_forged'
                            WHERE operation_id = '{op}' RETURNING operation_id, tenant_id, fence)
             INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor, evidence)
             SELECT operation_id, tenant_id, 'transition', 'in_progress', 'succeeded', fence, 'execute',
                    '{{\"confirmed\": {confirmed}}}' FROM moved"
        )
    };
    vec![
        ("the status alone", vec![claim.clone(), succeed("")]),
        (
            "with an object id",
            vec![claim.clone(), succeed(", external_id = 'pay_forged'")],
        ),
        (
            "with an answer no attempt gave",
            vec![
                claim.clone(),
                with_history(r#"{"by": "answer", "object_id": "pay_forged", "fence": 1}"#),
            ],
        ),
        (
            "with a provider event never received",
            vec![
                claim.clone(),
                with_history(
                    r#"{"by": "webhook", "object_id": "pay_forged", "webhook_event_id": "evt_forged"}"#,
                ),
            ],
        ),
        (
            "with a lookup never made",
            vec![
                claim.clone(),
                with_history(r#"{"by": "lookup", "object_id": "pay_forged"}"#),
            ],
        ),
        (
            "as an operator, from a worker's role",
            vec![
                claim,
                with_history(r#"{"by": "operator", "evidence": "trust me"}"#),
            ],
        ),
    ]
}

#[tokio::test]
async fn no_role_makes_a_success_without_the_providers_proof() {
    let fleet = TestFleet::with_prepare().await;
    let op = fleet.submitted(&intent()).await;
    let mut wrong = Vec::new();
    let mut tried = 0;
    for role in DbRole::ALL {
        if !writes_status(&fleet, role).await {
            continue;
        }
        let mut client = fleet.connect_as(role).await;
        for (what, statements) in forgeries(&op) {
            tried += 1;
            let answer = answer_to(&mut client, &statements).await;
            // A role may not write some of these at all (a history row of another
            // actor, 42501): refused either way, never "ok".
            if answer != UNPROVEN && !answer.starts_with("42501") {
                wrong.push(format!("{} {what}: {answer}", role.name()));
            }
        }
    }
    let mut owner = fleet.sql().await;
    for (what, statements) in forgeries(&op) {
        // The owner may write an operator's history row; an operator with no stated
        // evidence, or a worker's actor, is still refused.
        if what.starts_with("as an operator") {
            continue;
        }
        let answer = answer_to(&mut owner, &statements).await;
        if answer != UNPROVEN {
            wrong.push(format!("owner {what}: {answer}"));
        }
    }
    assert!(tried > 0, "no role writes the status");
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(fleet.row(&op).await.status, Status::NotStarted);
    fleet.stop().await;
}

#[tokio::test]
async fn a_paid_payment_carries_its_receipt() {
    let (fleet, op) = TestFleet::with_a_paid_payment().await;
    let row = fleet.row(&op).await;
    let view: serde_json::Value = fleet
        .sql()
        .await
        .query_one(
            "SELECT operation_view(o) FROM operations o WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    let confirmation = &view["confirmation"];
    assert_eq!(confirmation["by"], "answer", "{view}");
    assert_eq!(
        confirmation["object_id"].as_str(),
        row.external_id.as_deref()
    );
    assert_eq!(confirmation["fence"], row.fence);
    let outbox: serde_json::Value = fleet
        .sql()
        .await
        .query_one(
            "SELECT data FROM operation_outbox WHERE operation_id = $1 AND event_type = 'succeeded'",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(outbox["confirmation"], *confirmation);
    fleet.stop().await;
}
