//! A CRM deal create (a create the provider cannot deduplicate, found again by search)
//! under the provider's rate (docs/design.md#provider-rates): a 429 on its search or on
//! its create is waited out within the claim, as a payment's is, and a claim that dies
//! before its request was sent (waiting for a rate slot) is released as not sent, with
//! no lookup (migrations/0060_attempt_send_mark.sql).
//!
//! The simulator's lookups are counted with a fault rule that fires on every search (a
//! 1 ms delay, `times` counting down): what a test reads back is how many it saw.

use fleet_core::history::HistoryKind;
use fleet_core::{AttemptOutcome, Reason, Status};
use fleet_tests::{
    at, contract, deal_create_intent, fast_reconcile, op_of, two_columns, TestFleet,
};
use serde_json::{json, Value};

/// The searches a counter installed for `route` can count.
const COUNTER: u64 = 1_000;

/// Counts every request to `route` from now on (behind any rule installed before it).
async fn count(fleet: &TestFleet, route: &str) {
    fleet
        .sim_fault(json!({"route": route, "kind": "delay", "delay_ms": 1, "times": COUNTER}))
        .await;
}

/// How many requests the counter of `route` saw.
async fn counted(fleet: &TestFleet, route: &str) -> u64 {
    let rules = fleet.sim_get("/_sim/faults").await;
    let left = rules["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["route"] == route && r["kind"] == "delay")
        .map_or(0, |r| r["times"].as_u64().unwrap());
    COUNTER - left
}

/// The statuses the simulator answered to the deal creates of `op`, in order.
async fn create_statuses(fleet: &TestFleet, op: &str) -> Vec<Value> {
    fleet
        .sim_requests(Some(op))
        .await
        .iter()
        .filter(|r| r["method"] == "POST" && r["path"] == "/v1/deals")
        .map(|r| r["status"].clone())
        .collect()
}

/// The send marks of the operation's attempts, by fence.
async fn send_marks(fleet: &TestFleet, op: &str) -> Vec<(i64, Option<bool>)> {
    two_columns(
        &fleet.sql().await,
        "SELECT fence, request_sent FROM attempts WHERE operation_id = $1 ORDER BY fence",
        &[&op],
    )
    .await
}

/// Whether the history holds a move back to `not_started` (a released claim).
async fn released(fleet: &TestFleet, op: &str) -> Vec<Option<Reason>> {
    fleet
        .history(op)
        .await
        .into_iter()
        .filter(|e| e.kind == HistoryKind::Transition && e.to_status == Some(Status::NotStarted))
        .map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn a_crm_create_and_its_search_answered_429_are_waited_out_within_one_claim() {
    let mut fleet = TestFleet::with_prepare().await;
    // The search is refused once, then counted; the create is refused twice, then made.
    fleet
        .sim_fault(json!({"route": "GET /v1/deals", "kind": "error_before_commit", "status": 429}))
        .await;
    count(&fleet, "GET /v1/deals").await;
    count(&fleet, "GET /v1/deals/{id}").await;
    fleet
        .sim_fault(json!({"route": "POST /v1/deals", "kind": "error_before_commit", "status": 429, "times": 2}))
        .await;
    fleet.spawn_execute();
    let i = deal_create_intent();
    let op = op_of(&i);
    fleet.submit_and_approve(&i).await;

    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!((row.fence, row.attempts), (1, 1), "one claim");
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert_eq!(attempts.len(), 1, "one attempt row: {attempts:?}");
    assert_eq!(attempts[0].outcome, Some(AttemptOutcome::Succeeded));
    assert_eq!(
        create_statuses(&fleet, &op).await,
        [json!(429), json!(429), json!(201)],
        "the same create three times: refused, refused, created"
    );
    assert_eq!(fleet.sim_effects_of(&op, "deals").await, json!(1));
    assert_eq!(
        1 + counted(&fleet, "GET /v1/deals").await,
        2,
        "the one search before the create, and its resend after the 429"
    );
    assert_eq!(counted(&fleet, "GET /v1/deals/{id}").await, 0);
    assert!(
        released(&fleet, &op).await.is_empty(),
        "no 429 released the claim"
    );
    assert_eq!(send_marks(&fleet, &op).await, [(1, Some(true))]);
    fleet.stop().await;
}

#[tokio::test]
async fn a_claim_killed_while_waiting_for_a_rate_slot_is_released_not_sent_and_then_succeeds_without_a_lookup(
) {
    let mut fleet = TestFleet::with_prepare().await;
    // The CRM's shared schedule is paused for an hour: a claim waits for its slot.
    fleet
        .sql()
        .await
        .execute(
            "INSERT INTO provider_rates (provider, paused_until) VALUES ('crm', now() + interval '1 hour')
             ON CONFLICT (provider) DO UPDATE SET paused_until = EXCLUDED.paused_until",
            &[],
        )
        .await
        .unwrap();
    count(&fleet, "GET /v1/deals").await;
    count(&fleet, "GET /v1/deals/{id}").await;
    let mut doomed = fleet.spawn_process(
        "fleet-execute",
        &[("LEASE_TTL_MS", "1500"), ("CRM_RATE_PER_S", "5")],
    );
    let i = deal_create_intent();
    let op = op_of(&i);
    fleet.submit_and_approve(&i).await;
    fleet.reaches(&op, Status::InProgress).await;
    assert_eq!(send_marks(&fleet, &op).await, [(1, Some(false))]);
    doomed.kill9();

    // Unpaced from here: reconcile finds the dead claim, and another execute takes it.
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    fleet.spawn_execute();
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.fence, 2, "claimed again");
    assert_eq!(
        row.attempts, 1,
        "the claim that sent nothing is not counted as an attempt"
    );
    assert_eq!(row.unknown_since, None, "never unknown");
    assert_eq!(
        released(&fleet, &op).await,
        [Some(Reason::ClaimLostBeforeSend)]
    );
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert_eq!(attempts[0].outcome, Some(AttemptOutcome::NotExecuted));
    assert!(
        attempts[0]
            .detail
            .as_deref()
            .is_some_and(|d| d.starts_with("not sent")),
        "{:?}",
        attempts[0].detail
    );
    assert_eq!(attempts[1].outcome, Some(AttemptOutcome::Succeeded));
    assert_eq!(
        send_marks(&fleet, &op).await,
        [(1, Some(false)), (2, Some(true))]
    );
    // No lookup: only the second claim's search before its create.
    assert_eq!(counted(&fleet, "GET /v1/deals").await, 1);
    assert_eq!(counted(&fleet, "GET /v1/deals/{id}").await, 0);
    assert_eq!(fleet.sim_posts_to(&op, "/v1/deals").await, 1);
    assert_eq!(fleet.sim_effects_of(&op, "deals").await, json!(1));
    fleet.stop().await;
}
