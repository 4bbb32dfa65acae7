//! The orders API: transitions with a `from` precondition and a `transition_ref`, the
//! order read by id, faults around the commit, the effect counter and the admin helpers.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{error_code, json_of, start_default, Sim, API_KEY};

async fn seed(sim: &Sim, status: &str) -> String {
    let (code, order) = json_of(
        sim.admin_post("/_sim/orders", &json!({"status": status}))
            .await,
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{order}");
    order["id"].as_str().unwrap().to_owned()
}

async fn transition(
    sim: &Sim,
    id: &str,
    from: &str,
    to: &str,
    transition_ref: &str,
) -> reqwest::Result<reqwest::Response> {
    sim.http
        .post(sim.url(&format!("/v1/orders/{id}/transitions")))
        .bearer_auth(API_KEY)
        .json(
            &json!({"from": from, "to": to, "transition_ref": transition_ref, "reason": "shipped"}),
        )
        .send()
        .await
}

async fn order(sim: &Sim, id: &str) -> Value {
    json_of(sim.get(&format!("/v1/orders/{id}")).await).await.1
}

#[tokio::test]
async fn a_transition_moves_the_order_once_and_a_repeat_meets_its_own_ref() {
    let sim = start_default().await;
    let id = seed(&sim, "paid").await;
    let (status, moved) = json_of(
        transition(&sim, &id, "paid", "fulfilled", "op_a")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            moved["status"].clone(),
            moved["version"].clone(),
            moved["last_transition_ref"].clone()
        ),
        (json!("fulfilled"), json!(2), json!("op_a"))
    );
    let (status, again) = json_of(
        transition(&sim, &id, "paid", "fulfilled", "op_a")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        again,
        json!({"error": {"type": "status_conflict", "current_status": "fulfilled", "last_transition_ref": "op_a"}})
    );
    assert_eq!(sim.effects("op_a").await["orders"], json!(1));
    assert_eq!(order(&sim, &id).await["version"], json!(2));
    let logged = sim.requests("op_a").await;
    assert_eq!(logged.len(), 2);
    assert_eq!(logged[0]["path"], json!("/v1/orders/{id}/transitions"));
    assert_eq!(
        (logged[0]["status"].clone(), logged[1]["status"].clone()),
        (json!(200), json!(409))
    );
}

#[tokio::test]
async fn another_users_change_breaks_the_precondition_and_unknown_orders_are_404() {
    let sim = start_default().await;
    let id = seed(&sim, "paid").await;
    let forced = sim
        .admin_post(
            &format!("/_sim/orders/{id}/status"),
            &json!({"status": "cancelled"}),
        )
        .await;
    assert_eq!(forced.status(), StatusCode::OK);
    let (status, conflict) = json_of(
        transition(&sim, &id, "paid", "fulfilled", "op_b")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(conflict["error"]["current_status"], json!("cancelled"));
    assert!(conflict["error"]["last_transition_ref"]
        .as_str()
        .unwrap()
        .starts_with("other_"));
    assert_eq!(sim.effects("op_b").await["orders"], json!(0));
    let (status, missing) = json_of(
        transition(&sim, "ord_none", "paid", "fulfilled", "op_c")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error_code(&missing)),
        (StatusCode::NOT_FOUND, "resource_missing")
    );
    assert_eq!(
        sim.get("/v1/orders/ord_none").await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn faults_strike_before_or_after_the_commit() {
    let sim = start_default().await;
    let route = "POST /v1/orders/{id}/transitions";
    let before = seed(&sim, "paid").await;
    sim.fault(json!({"route": route, "kind": "drop_before_commit"}))
        .await;
    assert!(
        transition(&sim, &before, "paid", "fulfilled", "op_d")
            .await
            .is_err(),
        "dropped unanswered"
    );
    assert_eq!(
        order(&sim, &before).await["status"],
        json!("paid"),
        "nothing applied"
    );
    let after = seed(&sim, "paid").await;
    sim.fault(json!({"route": route, "kind": "error_after_commit", "status": 500}))
        .await;
    let answered = transition(&sim, &after, "paid", "fulfilled", "op_e")
        .await
        .unwrap();
    assert_eq!(answered.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        order(&sim, &after).await["last_transition_ref"],
        json!("op_e"),
        "applied anyway"
    );
    assert_eq!(sim.effects("op_e").await["orders"], json!(1));
    sim.fault(
        json!({"route": "GET /v1/orders/{id}", "kind": "error_before_commit", "status": 503}),
    )
    .await;
    assert_eq!(
        sim.get(&format!("/v1/orders/{after}")).await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let invalid = sim
        .admin_post(
            "/_sim/faults",
            &json!({"route": "GET /v1/orders/{id}", "kind": "drop_after_commit"}),
        )
        .await;
    assert_eq!(
        invalid.status(),
        StatusCode::BAD_REQUEST,
        "a read commits nothing"
    );
}
