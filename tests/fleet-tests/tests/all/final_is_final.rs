//! The operation state table, held by the database whoever writes: a status moves only
//! as `fleet_core::state` allows, a final outcome never changes, and the moves only an
//! operator makes need the operator's recorded decision. Every component role is tried
//! with plain SQL, as a role taken over by an attacker would write it.

use std::collections::BTreeSet;

use fleet_core::history::HistoryKind;
use fleet_core::state::status_moves;
use fleet_core::{Resolution, Status};
use fleet_store::{role_url, ApiStore, DbRole, DecisionOutcome, Resolve};
use fleet_tests::status_guard::writes_status;
use fleet_tests::{at, decider, intent, op_of, TestFleet};

const MOVE: &str = "UPDATE operations SET status = $2 WHERE operation_id = $1";

const NOT_IN_THE_TABLE: &str = "23514 operations_status_transition";
const NOT_BY_AN_OPERATOR: &str = "23514 operations_status_by_operator";
const PERMISSION_DENIED: &str = "42501";

/// What the database answers to moving `op` to `to`, in a transaction rolled back:
/// "ok", or the SQLSTATE and the constraint named.
async fn answer_to_move(client: &mut tokio_postgres::Client, op: &str, to: Status) -> String {
    let tx = client.transaction().await.unwrap();
    let answer = match tx.execute(MOVE, &[&op, &to.as_str()]).await {
        Ok(_) => "ok".to_owned(),
        Err(e) => match e.as_db_error() {
            Some(db) => match db.constraint() {
                Some(c) => format!("{} {c}", db.code().code()),
                None => db.code().code().to_owned(),
            },
            None => e.to_string(),
        },
    };
    tx.rollback().await.unwrap();
    answer
}

#[tokio::test]
async fn the_database_allows_exactly_the_status_moves_of_the_state_table() {
    let fleet = TestFleet::start().await;
    let in_database: BTreeSet<(String, String, bool)> = fleet
        .sql()
        .await
        .query(
            "SELECT from_status, to_status, operator_only FROM operation_status_moves",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let in_core: BTreeSet<(String, String, bool)> = status_moves()
        .into_iter()
        .map(|m| (m.from.to_string(), m.to.to_string(), m.operator_only))
        .collect();
    assert_eq!(
        in_database.difference(&in_core).collect::<Vec<_>>(),
        Vec::<&(String, String, bool)>::new(),
        "moves the database allows and the state table does not"
    );
    assert_eq!(
        in_core.difference(&in_database).collect::<Vec<_>>(),
        Vec::<&(String, String, bool)>::new(),
        "moves of the state table the database refuses"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn no_role_moves_a_succeeded_operation_to_any_other_status() {
    let (fleet, op) = TestFleet::with_a_paid_payment().await;
    let mut wrong = Vec::new();
    for role in DbRole::ALL {
        let expected = if writes_status(&fleet, role).await {
            NOT_IN_THE_TABLE
        } else {
            PERMISSION_DENIED
        };
        let mut client = fleet.connect_as(role).await;
        for to in Status::ALL.into_iter().filter(|&s| s != Status::Succeeded) {
            let answer = answer_to_move(&mut client, &op, to).await;
            if answer != expected {
                wrong.push(format!("{} succeeded → {to}: {answer}", role.name()));
            }
        }
    }
    // The internet-facing role is the one the attack came through: it must be one the
    // trigger, not a missing grant, stops.
    assert!(writes_status(&fleet, DbRole::WebhookIngest).await);
    // Nor the owner: a final outcome is final for everyone.
    let mut owner = fleet.sql().await;
    let answer = answer_to_move(&mut owner, &op, Status::Failed).await;
    if answer != NOT_IN_THE_TABLE {
        wrong.push(format!("owner succeeded → failed: {answer}"));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(fleet.row(&op).await.status, Status::Succeeded);
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT count(*) FROM operation_outbox WHERE operation_id = '{op}' AND event_type = 'failed'"
            ))
            .await,
        0,
        "the agent was told the payment failed"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_worker_role_neither_skips_the_table_nor_makes_an_operators_move() {
    let fleet = TestFleet::with_prepare().await;
    let i = intent();
    let op = fleet.submitted(&i).await;
    assert_eq!(op, op_of(&i));
    let mut wrong = Vec::new();
    for role in DbRole::ALL {
        if !writes_status(&fleet, role).await {
            continue;
        }
        let mut client = fleet.connect_as(role).await;
        for (to, expected) in [
            // Straight to an outcome, without a claim or a provider's answer.
            (Status::Succeeded, NOT_IN_THE_TABLE),
            (Status::Failed, NOT_IN_THE_TABLE),
            (Status::Unknown, NOT_IN_THE_TABLE),
            (Status::Accepted, NOT_IN_THE_TABLE),
            // A dispute is an operator's decision, recorded as one: no role makes it by
            // writing the status alone, the API's included.
            (Status::Disputed, NOT_BY_AN_OPERATOR),
        ] {
            let answer = answer_to_move(&mut client, &op, to).await;
            if answer != expected {
                wrong.push(format!("{} not_started → {to}: {answer}", role.name()));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(fleet.row(&op).await.status, Status::NotStarted);
    fleet.stop().await;
}

#[tokio::test]
async fn the_operators_dispute_and_resolution_still_move_the_row_as_the_api_role() {
    let fleet = TestFleet::with_prepare().await;
    let op = fleet.submitted(&intent()).await;
    let url = role_url(
        &fleet.database_url,
        DbRole::Api,
        DbRole::Api.password_from_env().as_deref(),
    )
    .unwrap();
    let api = ApiStore::connect(&url, 2).unwrap();
    let ann = decider("ann");
    assert_eq!(
        api.dispute(at(&op), "the payee called: not theirs", &ann)
            .await
            .unwrap(),
        DecisionOutcome::Moved(Status::Disputed)
    );
    // A worker cannot end the dispute in the operator's place.
    let mut reconcile = fleet.connect_as(DbRole::Reconcile).await;
    assert_eq!(
        answer_to_move(&mut reconcile, &op, Status::Cancelled).await,
        NOT_BY_AN_OPERATOR
    );
    let resolve = Resolve {
        outcome: Resolution::Failed,
        external_id: None,
        evidence: "nothing was sent: checked with the provider",
    };
    assert_eq!(
        api.resolve(at(&op), resolve, &ann).await.unwrap(),
        DecisionOutcome::Moved(Status::Failed)
    );
    // Final now, for the API's role too.
    let mut api_sql = fleet.connect_as(DbRole::Api).await;
    assert_eq!(
        answer_to_move(&mut api_sql, &op, Status::Succeeded).await,
        NOT_IN_THE_TABLE
    );
    let moves: Vec<(Option<Status>, Option<Status>, String)> = fleet
        .history(&op)
        .await
        .into_iter()
        .filter(|e| e.kind == HistoryKind::Transition)
        .map(|e| (e.from_status, e.to_status, e.actor))
        .collect();
    let by_ann = |from, to| (Some(from), Some(to), "operator:ann".to_owned());
    assert_eq!(
        moves,
        vec![
            by_ann(Status::NotStarted, Status::Disputed),
            by_ann(Status::Disputed, Status::Failed),
        ]
    );
    api.close();
    fleet.stop().await;
}
