//! `order.status.change` end to end: a transition with a `from` precondition and our
//! `transition_ref`, executed once; a broken precondition is a new decision (cancelled
//! with the current status recorded), except when the order already holds our own
//! transition; a provider that cannot make the change conditional is refused at prepare.

use fleet_core::{AttemptOutcome, Status};
use fleet_providers::Capabilities;
use fleet_tests::{at, reference};
use fleet_tests::{op_of, order_change_intent, TestFleet};
use serde_json::json;

async fn running() -> TestFleet {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    fleet
}

#[tokio::test]
async fn an_approved_status_change_moves_the_order_once_and_says_what_it_does() {
    let fleet = running().await;
    let order = fleet.sim_order("paid").await;
    let i = order_change_intent(&order, "paid", "fulfilled");
    let op = fleet.submit_and_approve(&i).await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(
        row.external_id.as_deref(),
        Some(order.as_str()),
        "the order is the effect"
    );
    let now = fleet.sim_get(&format!("/_sim/orders/{order}")).await;
    assert_eq!(
        (now["status"].clone(), now["last_transition_ref"].clone()),
        (json!("fulfilled"), json!(fleet.reference_of(&op).await))
    );
    assert_eq!(fleet.sim_effects(&op).await, 1);
    assert_eq!(fleet.sim_posts(&op).await, 1);
    assert_eq!(
        fleet_core::wording::describe(row.action, row.target.as_deref(), &row.payload),
        format!("Move order {order} from paid to fulfilled")
    );
    fleet.stop().await;
}

#[tokio::test]
async fn an_order_someone_else_moved_is_cancelled_with_its_status_recorded_and_a_superseding_intent_succeeds(
) {
    let fleet = running().await;
    let order = fleet.sim_order("paid").await;
    // Someone puts the order on hold after the agent read it at `paid`.
    fleet
        .sim_post(
            &format!("/_sim/orders/{order}/status"),
            json!({"status": "on_hold"}),
        )
        .await;
    let stale = order_change_intent(&order, "paid", "fulfilled");
    let old = fleet.submit_and_approve(&stale).await;
    let row = fleet.reaches(&old, Status::Cancelled).await;
    assert_eq!(
        (
            row.status_reason.map(fleet_core::Reason::as_str),
            row.error_code.as_deref()
        ),
        (Some("status_conflict"), Some("status_conflict"))
    );
    let result = row.result.expect("the provider's answer is recorded");
    assert_eq!(
        result["error"]["current_status"],
        json!("on_hold"),
        "the current status is recorded: {result}"
    );
    assert_eq!(fleet.sim_posts(&old).await, 1, "zero retries");
    assert_eq!(fleet.sim_effects(&old).await, 0);
    let attempts = fleet.store.attempts(at(&old)).await.unwrap();
    assert_eq!(attempts[0].outcome, Some(AttemptOutcome::StatusConflict));

    // A person approves the corrected intent, made against the status the order has now.
    let mut fresh = order_change_intent(&order, "on_hold", "fulfilled");
    fresh["supersedes"] = json!(old);
    let new = fleet.submit_and_approve(&fresh).await;
    fleet.reaches(&new, Status::Succeeded).await;
    let now = fleet.sim_get(&format!("/_sim/orders/{order}")).await;
    assert_eq!(
        (now["status"].clone(), now["last_transition_ref"].clone()),
        (json!("fulfilled"), json!(fleet.reference_of(&new).await))
    );
    fleet.stop().await;
}

#[tokio::test]
async fn an_order_already_at_the_target_status_by_our_own_transition_is_succeeded_not_cancelled() {
    let fleet = running().await;
    let order = fleet.sim_order("paid").await;
    let i = order_change_intent(&order, "paid", "fulfilled");
    let op = op_of(&i);
    // Our transition already happened (an attempt whose answer and record were lost).
    fleet
        .sim_post(
            &format!("/_sim/orders/{order}/status"),
            json!({"status": "fulfilled", "transition_ref": reference(&op)}),
        )
        .await;
    fleet.submit_and_approve(&i).await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), Some(order.as_str()));
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert_eq!(
        (attempts.len(), attempts[0].http_status),
        (1, Some(409)),
        "the 409 said it was ours"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn an_orders_provider_that_cannot_make_a_transition_conditional_is_refused_at_prepare() {
    let mut fleet = TestFleet::start().await;
    let unconditional = Capabilities {
        lookup: true,
        ..Capabilities::NONE
    };
    fleet.spawn_prepare_with(
        fleet
            .provider_configs()
            .capabilities()
            .with("orders", unconditional),
    );
    let i = order_change_intent("ord_1", "paid", "fulfilled");
    fleet
        .refused_at_intake(&i, "provider_cannot_update_conditionally")
        .await;
    fleet.stop().await;
}
