//! A charge's risk cues (`charge.create` with `PAYMENTS_PROVIDER=stripe`), judged at intake
//! over the tenant's own succeeded charges, through the real `fleet-api` (approvals, one
//! signed with the approver's key) and `fleet-execute` processes, against localstripe:
//! the first charge to a card carries `first_charge_to_card` and, under `charges-v2`,
//! needs one approver more, one approval signed; once it succeeded, a second charge to the
//! same card carries nothing; an amount above three times the customer's usual charge
//! carries `charge_above_usual`.

use chrono::{Duration, Utc};
use fleet_core::approval_statement::format_expiry;
use fleet_core::{ApprovalStatement, Role, Status};
use fleet_tests::{
    charge_intent, hash_of, op_of, Localstripe, StripeProxy, TestFleet, LOCALSTRIPE_KEY, TENANT,
};
use serde_json::{json, Value};

/// A card that pays.
const VISA: &str = "4242424242424242";

/// A charge of `amount_minor` for `invoice` to `customer`'s card `pm`, under charges-v2.
fn charge(customer: &str, pm: &str, invoice: &str, amount_minor: i64) -> Value {
    let mut i = charge_intent(customer, pm, amount_minor);
    i["payload"]["invoice_id"] = json!(invoice);
    i["policy_version"] = json!("charges-v2");
    i["data_version"] = json!(format!("{invoice}@1"));
    i["operation_id"] = json!(format!("op_{}", ulid::Ulid::new()));
    i
}

/// The codes of the cues stored with `op`, as its view carries them.
async fn cues_of(fleet: &TestFleet, op: &str) -> Vec<String> {
    fleet.view_in_db(op).await["risk"]
        .as_array()
        .expect("a charge's view carries its risk cues")
        .iter()
        .map(|c| c["cue"].as_str().unwrap().to_owned())
        .collect()
}

/// (approvals, signed approvals) `op` needs, as stored at intake.
async fn needs(fleet: &TestFleet, op: &str) -> (i64, i16) {
    let required = fleet.view_in_db(op).await["approvals_required"]
        .as_i64()
        .unwrap();
    (required, fleet.row(op).await.signatures_required)
}

#[tokio::test]
async fn a_first_charge_to_a_card_needs_a_signed_second_approver_and_an_unusual_amount_is_flagged()
{
    let stripe = Localstripe::start().await;
    let proxy = StripeProxy::start(&stripe.base_url).await;
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare_at_stripe(&proxy.base_url, LOCALSTRIPE_KEY);
    fleet
        .assign_policy(Some(TENANT), "charge.create", "charges-v2")
        .await;
    let api = fleet.spawn_api(&[]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let bob = fleet.token("bob", Role::Approver, &[TENANT]).await;
    let alice_key = fleet.register_key("alice").await;
    let bob_key = fleet.register_key("bob").await;
    let env = [
        ("PAYMENTS_PROVIDER", "stripe"),
        ("PAYMENTS_URL", proxy.base_url.as_str()),
        ("PAYMENTS_API_KEY", LOCALSTRIPE_KEY),
        ("PAYMENTS_KEY_RETENTION_S", "0"),
        ("PAYMENTS_STRIPE_SEARCH", "off"),
        ("PAYMENTS_SEARCH_LAG_MS", "0"),
        ("UNSTARTED_REDRIVE_MS", "500"),
        ("SWEEP_INTERVAL_MS", "100"),
    ];
    let _execute = fleet.spawn_process("fleet-execute", &env);
    let (customer, pm) = stripe.customer_with_card(VISA).await;

    // Nothing was ever charged to the card: flagged, and charges-v2 asks one approver
    // more than the amount needs (1), one of the approvals signed.
    let first = charge(&customer, &pm, "inv_2001", 10_000);
    let op = fleet.submitted(&first).await;
    assert_eq!(cues_of(&fleet, &op).await, ["first_charge_to_card"]);
    assert_eq!(needs(&fleet, &op).await, (2, 1));
    let row = fleet.row(&op).await;
    let view = fleet.view_in_db(&op).await;
    assert_eq!(
        view["risk"],
        json!([{"cue": "first_charge_to_card"}]),
        "{view}"
    );

    // Bob's approval unsigned is refused and records nothing: the policy asks for a
    // signed one, and an unsigned approval could never count towards it.
    let path = format!("/v1/operations/{op}/approve");
    let hash = hash_of(&first);
    let answer = api
        .post(&fleet.http, &bob, &path, &json!({"payload_hash": hash}))
        .await;
    let status = answer.status();
    let refusal: Value = answer.json().await.unwrap();
    assert_eq!(status, reqwest::StatusCode::CONFLICT, "{refusal}");
    assert_eq!(refusal["code"], "signature_required", "{refusal}");
    // Each signs the statement about the stored row (the card Stripe described): the
    // first signed approval is not enough, the second completes the quorum.
    let expires_at = Utc::now() + Duration::hours(1);
    let statement = ApprovalStatement::derive(&row.statement_subject(), expires_at);
    let signed_by = |key: &fleet_core::ApproverKey| {
        json!({
            "payload_hash": hash,
            "key_id": key.public_key().key_id().as_str(),
            "signature": key.sign(&statement.to_bytes()).to_text(),
            "expires_at": format_expiry(statement.expires_at),
        })
    };
    let answer = api
        .post(&fleet.http, &bob, &path, &signed_by(&bob_key))
        .await;
    let view: Value = answer.json().await.unwrap();
    assert_eq!(view["approval_status"], "pending", "{view}");
    fleet.still_pending(&op).await;
    let answer = api
        .post(&fleet.http, &alice, &path, &signed_by(&alice_key))
        .await;
    let view: Value = answer.json().await.unwrap();
    assert_eq!(view["approval_status"], "approved", "{view}");
    fleet.reaches(&op, Status::Succeeded).await;
    // The cues travel with the operation's events.
    let with_cue = fleet
        .count(&format!(
            "SELECT count(*) FROM operation_outbox WHERE operation_id = '{op}'
             AND data -> 'risk' = '[{{\"cue\": \"first_charge_to_card\"}}]'::jsonb"
        ))
        .await;
    assert!(
        with_cue >= 3,
        "prepared, approved, succeeded: each carries the cues"
    );

    // The card was charged once: a second, usual charge to it carries nothing and needs
    // what its amount needs.
    let second = charge(&customer, &pm, "inv_2002", 12_000);
    let second_op = fleet.submitted(&second).await;
    assert!(cues_of(&fleet, &second_op).await.is_empty());
    assert_eq!(needs(&fleet, &second_op).await, (1, 0));

    // The customer's usual charge is 100.00 KZT: 300.00 is not above three times it,
    // 300.01 is.
    let usual = charge(&customer, &pm, "inv_2003", 30_000);
    assert!(cues_of(&fleet, &fleet.submitted(&usual).await)
        .await
        .is_empty());
    let unusual = charge(&customer, &pm, "inv_2004", 30_001);
    let unusual_op = fleet.submitted(&unusual).await;
    assert_eq!(
        fleet.view_in_db(&unusual_op).await["risk"],
        json!([{"cue": "charge_above_usual", "multiple": 3, "median_minor": 10_000}])
    );
    assert_eq!(needs(&fleet, &unusual_op).await, (2, 1));

    // Only the first charge was sent to Stripe.
    assert_eq!(proxy.creates().len(), 1);
    assert_eq!(op_of(&first), op);
    drop(api);
    fleet.stop().await;
}
