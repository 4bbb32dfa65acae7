//! Who a payment really goes to, through the real prepare and execute against Postgres,
//! RabbitMQ and the simulator's directory of beneficiaries: the payee found at intake is
//! kept as evidence, an unknown one is refused, and a payee whose account changed after
//! the approval is never paid.

use fleet_broker::Queue;
use fleet_core::{AttemptOutcome, PolicySet, Role, Status};
use fleet_tests::at;
use fleet_tests::{
    contract, eventually, fast_reconcile, hash_of, intent, op_of, session_of, TestFleet,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// How the simulator answered each payment request of `op`, in order (`null`: dropped).
async fn answered(fleet: &TestFleet, op: &str) -> Vec<Value> {
    fleet
        .sim_requests(Some(op))
        .await
        .iter()
        .map(|r| r["status"].clone())
        .collect()
}

/// The database refuses `sql` (about the operation `op`) to the owner of the tables:
/// `what` no role, however privileged, may change.
async fn assert_refused_to_owner(fleet: &TestFleet, sql: &str, op: &str, what: &str) {
    let session = fleet.store.pooled_session().await.unwrap();
    assert!(session.execute(sql, &[&op]).await.is_err(), "{what}");
}

/// A fleet with prepare running, and the seed payment (to `vendor_77`) prepared.
async fn prepared_payment() -> (TestFleet, Value, String) {
    let fleet = TestFleet::with_prepare().await;
    let i = intent();
    let op = fleet.submitted(&i).await;
    (fleet, i, op)
}

#[tokio::test]
async fn the_payee_found_at_intake_is_kept_as_evidence_and_shown_in_the_view() {
    let (fleet, i, op) = prepared_payment().await;
    let shown = fleet
        .payments_client(5_000)
        .get_beneficiary("vendor_77", None)
        .await
        .unwrap()
        .expect("a seeded payee");
    let row = fleet.row(&op).await;
    let payee = row.payee.expect("evidence kept");
    assert_eq!(payee["status"], "found");
    assert_eq!(payee["id"], "vendor_77");
    for member in ["name", "country", "verified", "version"] {
        assert_eq!(payee[member], shown[member], "{member}");
    }
    assert_eq!(payee["account"], shown["account"]);
    assert!(payee["looked_up_at"].is_string());
    assert_eq!(fleet.view_in_db(&op).await["payee"], payee);
    // The payload hash is the agent's snapshot's, whatever was found.
    assert_eq!(row.payload_hash, hash_of(&i));

    // As immutable as the snapshot, even for the owner of the table.
    let edit =
        "UPDATE operations SET payee = jsonb_set(payee, '{version}', '9') WHERE operation_id = $1";
    assert_refused_to_owner(&fleet, edit, &op, "the payee evidence is immutable").await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_unknown_payee_is_dead_lettered_payee_unknown_with_nothing_written() {
    let fleet = TestFleet::with_prepare().await;
    let mut i = intent();
    i["payload"]["beneficiary_id"] = json!("nobody_1");
    fleet.refused_at_intake(&i, "payee_unknown").await;
    // A directory that does not answer is no 404: see the payee_directory module.
    fleet.stop().await;
}

#[tokio::test]
async fn under_a_policy_that_approves_unknown_payees_one_needs_more_approvers() {
    let mut fleet = TestFleet::start().await;
    let open = "policy_version = \"payments-open-v1\"\n\
                [actions.\"payment.create\"]\napprovers = 1\n\
                unknown_payee = \"approve\"\nunknown_payee_approvers = 3\n";
    let policies = PolicySet::parse([("payments-open-v1", open)]).unwrap();
    fleet.load_policies(&policies).await;
    fleet
        .assign_policy(Some("org_482"), "payment.create", "payments-open-v1")
        .await;
    fleet.spawn_prepare_judging(fleet.provider_configs().capabilities(), policies);
    let mut i = intent();
    i["payload"]["beneficiary_id"] = json!("nobody_3");
    i["policy_version"] = json!("payments-open-v1");
    let op = op_of(&i);
    fleet.submit(&i).await;
    let row = fleet.prepared(&op).await;
    assert_eq!(fleet.view_in_db(&op).await["approvals_required"], 3);
    let payee = row.payee.expect("the unknown payee is recorded");
    assert_eq!(
        (&payee["status"], &payee["id"], &payee["reason"]),
        (&json!("unknown"), &json!("nobody_3"), &json!("not_found"))
    );
    // A known payee under the same policy: its amount's quorum.
    let mut known = intent();
    known["policy_version"] = json!("payments-open-v1");
    fleet.submitted(&known).await;
    assert_eq!(
        fleet.view_in_db(&op_of(&known)).await["approvals_required"],
        1
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_payee_changed_after_the_approval_is_cancelled_beneficiary_changed_and_never_paid() {
    let (mut fleet, i, op) = prepared_payment().await;
    fleet.approve(&op, &hash_of(&i)).await.unwrap();
    // Someone talked the vendor's contact into "our new account".
    let now = fleet
        .sim_payee("vendor_77", "Vendor 77 LLP", "KZ07 999K ZT00 0000 4321")
        .await;
    assert_eq!(now["version"], 2);
    fleet.spawn_execute();

    let row = fleet.reaches(&op, Status::Cancelled).await;
    assert_eq!(
        row.status_reason.map(fleet_core::Reason::as_str),
        Some("beneficiary_changed")
    );
    assert_eq!(
        row.payee.unwrap()["version"],
        1,
        "the evidence stays what was approved"
    );
    assert_eq!(fleet.sim_effects(&op).await, 0);
    let statuses = answered(&fleet, &op).await;
    assert_eq!(statuses, [json!(409)], "exactly one POST, refused");

    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].outcome, Some(AttemptOutcome::VersionConflict));
    let detail = attempts[0].detail.clone().unwrap_or_default();
    assert!(
        detail.contains("version 1 → 2") && detail.contains("4321"),
        "{detail}"
    );
    let cancelled = fleet
        .history(&op)
        .await
        .into_iter()
        .find(|e| e.to_status == Some(fleet_core::Status::Cancelled))
        .expect("the cancellation's history row");
    assert_eq!(
        cancelled.reason.map(fleet_core::Reason::as_str),
        Some("beneficiary_changed")
    );
    let evidence = cancelled.evidence.expect("the new details");
    assert_eq!(evidence["payee_changed"]["approved_version"], 1);
    assert_eq!(evidence["payee_changed"]["now"]["version"], 2);
    assert_eq!(
        evidence["payee_changed"]["now"]["account"]["masked"],
        "KZ•• •••• •••• 4321"
    );
    assert!(
        !evidence.to_string().contains("999KZT"),
        "never the full number"
    );
    // The outcome event carries the reason.
    assert_eq!(fleet.view_in_db(&op).await["reason"], "beneficiary_changed");
    fleet.stop().await;
}

#[tokio::test]
async fn over_http_the_payee_is_in_the_operation_json_and_on_the_console_page_and_an_unknown_one_is_422(
) {
    let fleet = TestFleet::start().await;
    let issuer = fleet.spawn_issuer().await;
    let api = fleet.spawn_console(&issuer).await;
    let agent = fleet.token("billing-bot", Role::Agent, &["org_482"]).await;
    fleet
        .person("alice", Role::Approver, &["org_482"], "sub-alice")
        .await;
    let submit = |intent: Value| {
        let (http, url, agent) = (fleet.http.clone(), api.url("/v1/intents"), agent.clone());
        async move {
            let r = http
                .post(url)
                .bearer_auth(agent)
                .json(&intent)
                .send()
                .await
                .unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }
    };

    let mut i = intent();
    i["payload"]["beneficiary_id"] = json!("vendor_9");
    let (status, view) = submit(i.clone()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{view}");
    assert_eq!(view["payee"]["name"], "Vendor 9 LLP");
    assert_eq!(view["payee"]["verified"], false);
    assert_eq!(view["payee"]["version"], 1);
    let masked = view["payee"]["account"]["masked"]
        .as_str()
        .unwrap()
        .to_owned();

    let alice = session_of(&api, "sub-alice").await;
    let path = format!("/console/operations/{}", op_of(&i));
    let page = fleet_tests::console_get(&api, &alice, &path)
        .await
        .text()
        .await
        .unwrap();
    let block = page
        .split("<dl class=\"payee\" id=\"payee\">")
        .nth(1)
        .and_then(|rest| rest.split("</dl>").next())
        .expect("the payee block");
    for shown in ["vendor_9", "Vendor 9 LLP", "KZ", &masked, "unverified"] {
        assert!(block.contains(shown), "{shown} in {block}");
    }

    let mut unknown = intent();
    unknown["payload"]["beneficiary_id"] = json!("nobody_2");
    let (status, error) = submit(unknown.clone()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        (&error["code"], &error["field"]),
        (&json!("payee_unknown"), &json!("payload.beneficiary_id"))
    );
    assert!(fleet
        .store
        .get(at(&op_of(&unknown)))
        .await
        .unwrap()
        .is_none());
    fleet.stop().await;
}

#[tokio::test]
async fn a_payee_changed_while_a_payment_was_uncertain_is_looked_up_then_escalated_never_sent_again(
) {
    let (mut fleet, i, op) = prepared_payment().await;
    fleet.approve(&op, &hash_of(&i)).await.unwrap();
    // The first request's fate is unknown (the connection dropped, nothing committed).
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "drop_before_commit"}))
        .await;
    fleet.spawn_execute();
    fleet.reaches(&op, Status::Unknown).await;
    // Meanwhile the payee's account changes; reconcile proves the first request paid
    // nothing and sends it back; the provider refuses the second on the payee's version.
    fleet
        .sim_payee("vendor_77", "Vendor 77 LLP", "KZ07 999K ZT00 0000 4321")
        .await;
    fleet.spawn_reconcile(contract(0), fast_reconcile());
    fleet
        .escalated_as(&op, Status::Unknown, "beneficiary_changed")
        .await;
    assert_eq!(fleet.sim_effects(&op).await, 0);
    let statuses = answered(&fleet, &op).await;
    assert_eq!(statuses, [Value::Null, json!(409)], "never a third request");
    fleet.stop().await;
}

/// The codes of the risk cues the operation's view carries.
async fn cues_of(fleet: &TestFleet, op: &str) -> Vec<String> {
    fleet.view_in_db(op).await["risk"]
        .as_array()
        .expect("a payment's view carries its risk cues")
        .iter()
        .map(|c| c["cue"].as_str().unwrap().to_owned())
        .collect()
}

/// The seed payment for another invoice, of `amount_minor`.
fn another_invoice(invoice: &str, amount_minor: i64) -> Value {
    let mut i = fleet_tests::with_amount(intent(), json!(amount_minor));
    i["payload"]["invoice_id"] = json!(invoice);
    i
}

/// Submits `i` to the queue and waits until prepare stored it.
async fn prepared_now(fleet: &TestFleet, i: &Value) -> String {
    let op = fleet.submitted(i).await;
    op
}

#[tokio::test]
async fn risk_cues_judge_each_payment_over_the_tenants_own_payments() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();

    // Nothing was ever paid to vendor_77, nor to its account.
    let first = intent();
    let op = prepared_now(&fleet, &first).await;
    assert_eq!(
        cues_of(&fleet, &op).await,
        ["first_payment_to_payee", "first_payment_to_account"]
    );
    assert_eq!(
        fleet.view_in_db(&op).await["approvals_required"],
        1,
        "payments-v3 shows the cues and asks nothing more"
    );
    fleet.approve(&op, &hash_of(&first)).await.unwrap();
    fleet.reaches(&op, Status::Succeeded).await;

    // The same payee and account, a usual amount, another invoice: nothing to flag. (The
    // same invoice or the very same amount again would be a possible duplicate, within 7
    // days of the first: `possible_duplicates.rs`.)
    let usual = another_invoice("inv_9183", 1_200_000);
    assert!(cues_of(&fleet, &prepared_now(&fleet, &usual).await)
        .await
        .is_empty());

    // Four times the usual amount.
    let large = another_invoice("inv_9184", 5_000_000);
    let large_op = prepared_now(&fleet, &large).await;
    assert_eq!(cues_of(&fleet, &large_op).await, ["amount_above_usual"]);
    assert_eq!(
        fleet.view_in_db(&large_op).await["risk"][0],
        json!({"cue": "amount_above_usual", "multiple": 3, "median_minor": 1_250_000})
    );

    // "Our new account": the payee's account is not the one it was paid on.
    fleet
        .sim_payee("vendor_77", "Vendor 77 LLP", "KZ07 999K ZT00 0000 4321")
        .await;
    let moved = prepared_now(&fleet, &another_invoice("inv_9185", 1_300_000)).await;
    assert_eq!(
        cues_of(&fleet, &moved).await,
        [
            "first_payment_to_account",
            "account_changed_since_last_payment"
        ]
    );

    // Under payments-v4 (in force for another tenant) a flagged payment needs one
    // approver more, one of them signed.
    fleet
        .assign_policy(Some("org_v4"), "payment.create", "payments-v4")
        .await;
    let mut flagged = intent();
    flagged["tenant_id"] = json!("org_v4");
    flagged["policy_version"] = json!("payments-v4");
    flagged["payload"]["beneficiary_id"] = json!("vendor_5");
    let flagged_op = prepared_now(&fleet, &flagged).await;
    let view = fleet.view_in_db(&flagged_op).await;
    assert_eq!(view["approvals_required"], 2, "{view}");
    let row = fleet.row(&flagged_op).await;
    assert_eq!(row.signatures_required, 1);

    // As immutable as the snapshot, even for the owner of the table.
    let edit = "UPDATE operations SET risk = '[]' WHERE operation_id = $1";
    assert_refused_to_owner(&fleet, edit, &flagged_op, "the risk cues are immutable").await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_redelivered_intent_is_a_no_op_even_once_its_payee_cannot_be_looked_up() {
    let (fleet, i, op) = prepared_payment().await;
    // The directory stops answering for exactly one intake's three tries.
    fleet
        .sim_fault(json!({"route": "GET /v1/beneficiaries/{id}", "kind": "error_before_commit", "status": 500, "times": 3}))
        .await;
    // The same snapshot again (a redelivery, a resend): acked, nothing new, nothing
    // dead-lettered, the stored operation untouched.
    let before = fleet.row(&op).await;
    fleet.submit(&i).await;
    eventually("the redelivery's lookups to fail", || async {
        (fleet.sim_faults_left().await == 0).then_some(())
    })
    .await;
    // A message sent after it, to know the redelivery was handled when this one is.
    let mut fresh = intent();
    fresh["payload"]["beneficiary_id"] = json!("nobody_7");
    fleet.submit(&fresh).await;
    let dead = fleet.expect_dead_letters(Queue::IntentsPrepare, 1).await;
    assert_eq!(
        dead.iter()
            .map(|(body, reason)| (body.clone(), reason.clone()))
            .collect::<Vec<_>>(),
        [(
            fleet_tests::intent_bytes(&fresh),
            Some("payee_unknown".to_owned())
        )],
        "only the new intent is dead-lettered, never the stored snapshot's redelivery"
    );
    let after = fleet.row(&op).await;
    assert_eq!(
        (after.payee, after.updated_at),
        (before.payee, before.updated_at)
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 1);
    fleet.stop().await;
}
