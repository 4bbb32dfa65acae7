//! Objects belong to tenants, through the real prepare, execute and API processes against
//! Postgres, RabbitMQ and the simulator: an intent naming an object the fleet made or
//! changed for another tenant is refused `object_of_other_tenant` at every door (the
//! queue, HTTP, MCP) with nothing written; the tenant's own object is accepted; an object
//! the fleet has no record of is what the intent's policy says.

use fleet_core::{PolicySet, Role, Status};
use fleet_tests::at;
use fleet_tests::{intent, op_of, refund_intent, ApiProcess, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";

/// `i` as an intent of `tenant`.
fn of_tenant(mut i: Value, tenant: &str) -> Value {
    i["tenant_id"] = json!(tenant);
    i
}

/// A payment the fleet made for `OTHER_TENANT`: the provider's id of it.
async fn other_tenants_payment(fleet: &TestFleet) -> String {
    let op = fleet
        .submit_and_approve(&of_tenant(intent(), OTHER_TENANT))
        .await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    row.external_id.expect("the payment's id")
}

async fn post_intent(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    i: &Value,
) -> (StatusCode, Value) {
    let response = api.post(&fleet.http, token, "/v1/intents", i).await;
    (response.status(), response.json().await.unwrap())
}

#[tokio::test]
async fn a_refund_of_another_tenants_payment_is_refused_object_of_other_tenant_at_every_door() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let payment = other_tenants_payment(&fleet).await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("agent-a", Role::Agent, &[TENANT]).await;

    // HTTP: 422, naming the field, nothing written.
    let refund = of_tenant(refund_intent(&payment, 500_000), TENANT);
    let (status, body) = post_intent(&fleet, &api, &agent, &refund).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        (&body["error"]["code"], &body["error"]["field"]),
        (
            &json!("object_of_other_tenant"),
            &json!("payload.payment_id")
        )
    );
    assert!(fleet
        .store
        .get(at(&op_of(&refund)))
        .await
        .unwrap()
        .is_none());

    // The queue: dead-lettered with the same reason.
    let queued = of_tenant(refund_intent(&payment, 500_000), TENANT);
    fleet
        .refused_at_intake(&queued, "object_of_other_tenant")
        .await;

    // MCP: the tool refuses it.
    let mcp = api.mcp(&agent).await.expect("connect");
    let args = json!({
        "payload": {"payment_id": payment, "amount_minor": 500000, "currency": "KZT", "reason": "duplicate invoice"},
        "policy_version": "refunds-v1",
        "data_version": format!("{payment}@1"),
        "approval_ttl_seconds": 3600,
    });
    let refused = mcp.call("refund_create", args).await;
    assert_eq!(
        refused.refusal(),
        (
            "object_of_other_tenant".to_owned(),
            json!("payload.payment_id")
        )
    );
    mcp.close().await;
    assert_eq!(
        fleet
            .count("SELECT count(*) FROM operations WHERE action = 'refund.create'")
            .await,
        0
    );

    // The tenant that owns the payment refunds it as before.
    let owner = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    let own = of_tenant(refund_intent(&payment, 500_000), OTHER_TENANT);
    let (status, body) = post_intent(&fleet, &api, &owner, &own).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["approvals_required"], 1);
    fleet.stop().await;
}

#[tokio::test]
async fn an_object_the_fleet_has_no_record_of_is_refused_or_needs_more_approvers_as_the_policy_says(
) {
    let mut fleet = TestFleet::start().await;
    let strict = "policy_version = \"refunds-strict-v1\"\n\
                  [actions.\"refund.create\"]\napprovers = 1\n";
    let careful = "policy_version = \"refunds-careful-v1\"\n\
                   [actions.\"refund.create\"]\napprovers = 1\n\
                   foreign_object = \"approve\"\nforeign_object_approvers = 2\n";
    let mut files: Vec<(String, String)> = vec![
        ("refunds-strict-v1".into(), strict.into()),
        ("refunds-careful-v1".into(), careful.into()),
    ];
    let shipped =
        std::fs::read_to_string(fleet_tests::policy_dir().join("refunds-v1.toml")).unwrap();
    files.push(("refunds-v1".into(), shipped));
    let set = PolicySet::parse(files.iter().map(|(n, t)| (n.as_str(), t.as_str()))).unwrap();
    fleet.load_policies(&set).await;
    fleet.spawn_prepare_judging(fleet.provider_configs().capabilities(), set);
    let tenant = refund_intent("pay_any", 1)["tenant_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Refused by a policy that says nothing (the default), naming the field.
    fleet
        .assign_policy(Some(&tenant), "refund.create", "refunds-strict-v1")
        .await;
    let mut refused = refund_intent("pay_made_elsewhere_1", 500_000);
    refused["policy_version"] = json!("refunds-strict-v1");
    fleet.refused_at_intake(&refused, "object_unknown").await;

    // Two approvers under a policy that asks for them.
    fleet
        .assign_policy(Some(&tenant), "refund.create", "refunds-careful-v1")
        .await;
    let mut careful = refund_intent("pay_made_elsewhere_2", 500_000);
    careful["policy_version"] = json!("refunds-careful-v1");
    fleet.submitted(&careful).await;
    assert_eq!(
        fleet.view_in_db(&op_of(&careful)).await["approvals_required"],
        2
    );

    // The shipped policy: accepted with the action's own quorum.
    fleet
        .assign_policy(Some(&tenant), "refund.create", "refunds-v1")
        .await;
    let shipped = refund_intent("pay_made_elsewhere_3", 500_000);
    fleet.submitted(&shipped).await;
    assert_eq!(
        fleet.view_in_db(&op_of(&shipped)).await["approvals_required"],
        1
    );
    fleet.stop().await;
}
