//! `fleetctl demo --provider stripe`: card charges (`charge.create`) and refunds
//! (`refund.create`) through the whole fleet against a local Stripe double. It starts
//! localstripe (or uses `--stripe-url`), saves two customers' cards there (one Stripe
//! declines when it is charged) and makes two earlier sales the fleet did not make, starts
//! the fleet with the payments provider spoken as Stripe, submits the charges and the
//! refunds of the earlier sales through the API as the demo's agent, approves them as the
//! demo's approvers, then refunds part of the fleet's first charge the same way. It prints
//! each operation's outcome beside the Stripe object carrying its key
//! (`metadata[fleet_operation]`), read from the double itself, and fails unless every
//! operation has exactly one, in the outcome's state.

mod double;
mod report;

use std::time::Duration;

use fleet_core::{OpKey, OpRef};
use fleet_store::Store;
use serde_json::json;

use super::intents::{demo_intent, op_id, DemoIntent};
use super::{api, approve_all, with_fleet, DemoArgs};
use crate::args::Connection;
use double::StripeDouble;

/// A card that pays, and one Stripe saves but declines when it is charged
/// (`card_declined`).
const VISA: &str = "4242424242424242";
const DECLINED_WHEN_CHARGED: &str = "4000000000000341";
/// A development-only Stripe endpoint secret for webhook-ingest, which asks for one when
/// payments are spoken as Stripe (the double sends no events).
const WEBHOOK_SECRET: &str = "whsec_ZGV2LW9ubHktc3RyaXBlLXNlY3JldCE";
const TENANT: &str = "org_482";

fn charge(invoice: &str, customer: &str, payment_method: &str, amount_minor: i64) -> DemoIntent {
    demo_intent(
        json!({
            "schema": "intent.v1",
            "operation_id": op_id(),
            "tenant_id": TENANT,
            "action": "charge.create",
            "provider": "payments",
            "target": null,
            "payload": {"invoice_id": invoice, "customer": customer,
                        "payment_method": payment_method, "amount_minor": amount_minor,
                        "currency": "KZT"},
            "policy_version": "charges-v1",
            "data_version": format!("{invoice}@1"),
            "approval_ttl_seconds": 3600,
            "rationale": "The customer's subscription renews today; the card is on file.",
            "supersedes": null
        }),
        false,
    )
}

fn refund(payment: &str, amount_minor: i64) -> DemoIntent {
    demo_intent(
        json!({
            "schema": "intent.v1",
            "operation_id": op_id(),
            "tenant_id": TENANT,
            "action": "refund.create",
            "provider": "payments",
            "target": null,
            "payload": {"payment_id": payment, "amount_minor": amount_minor,
                        "currency": "KZT", "reason": "duplicate invoice"},
            "policy_version": "refunds-v1",
            "data_version": format!("{payment}@1"),
            "approval_ttl_seconds": 3600,
            "rationale": "The customer was billed twice for the same invoice.",
            "supersedes": null
        }),
        false,
    )
}

pub async fn run(conn: &Connection, args: &DemoArgs) -> anyhow::Result<()> {
    let stripe = StripeDouble::start(args.stripe_url.as_deref(), &args.log_dir).await?;
    println!("the Stripe double answers at {}", stripe.url);
    // localstripe ignores Idempotency-Key: with a retention of 0 the fleet never sends a
    // key twice, settling an uncertain call by finding its object, or asking a person.
    let payments = [
        ("PAYMENTS_PROVIDER", "stripe"),
        ("PAYMENTS_URL", stripe.url.as_str()),
        ("PAYMENTS_API_KEY", double::KEY),
        ("PAYMENTS_KEY_RETENTION_S", "0"),
        ("PAYMENTS_STRIPE_SEARCH", "off"),
        ("PAYMENTS_WEBHOOK_SECRET", WEBHOOK_SECRET),
    ];
    let stripe = &stripe;
    with_fleet(conn, args, &payments, |_, api_url| async move {
        drive(conn, args, stripe, &api_url).await
    })
    .await
}

/// Submits `intents` through the API, approves them, and waits until each is final or
/// escalated to a person.
async fn run_through(
    store: &Store,
    api_url: &str,
    intents: &[DemoIntent],
    deadline: tokio::time::Instant,
) -> anyhow::Result<()> {
    for intent in intents {
        api::post_intent(store, api_url, intent).await?;
    }
    let ids: Vec<OpKey> = intents
        .iter()
        .map(|i| OpKey::new(TENANT, i.intent.operation_id.as_str()))
        .collect();
    super::report::wait_until(store, &ids, deadline, |row| row.is_some(), "prepared").await?;
    let keys = std::env::temp_dir().join(format!("fleet-demo-keys-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&keys)?;
    let approved = approve_all(store, api_url, intents, TENANT, &keys).await;
    let _ = std::fs::remove_dir_all(&keys);
    approved?;
    let settled = |row: Option<&fleet_store::OperationRow>| {
        row.is_some_and(|r| r.status.is_final() || r.escalated_at.is_some())
    };
    super::report::wait_until(store, &ids, deadline, settled, "final or escalated").await
}

async fn drive(
    conn: &Connection,
    args: &DemoArgs,
    stripe: &StripeDouble,
    api_url: &str,
) -> anyhow::Result<()> {
    let store = Store::connect(conn.db.database_url.expose(), 4)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout_s);
    let (jane, jane_visa) = stripe
        .customer_with_card("Jane Doe", "jane@example.com", VISA)
        .await?;
    let (omar, omar_card) = stripe
        .customer_with_card("Omar Sadykov", "omar@example.com", DECLINED_WHEN_CHARGED)
        .await?;
    let earlier = [
        stripe.earlier_sale(&jane, &jane_visa, 8_000).await?,
        stripe.earlier_sale(&jane, &jane_visa, 15_000).await?,
    ];
    println!(
        "at Stripe: {jane} (a Visa that pays), {omar} (a card declined when charged), earlier sales {} and {}",
        earlier[0], earlier[1]
    );
    let first = vec![
        charge("inv_7001", &jane, &jane_visa, 12_500),
        charge("inv_7002", &jane, &jane_visa, 4_990),
        charge("inv_7003", &omar, &omar_card, 30_000),
        charge("inv_7004", &jane, &jane_visa, 20_000),
        refund(&earlier[0], 8_000),
        refund(&earlier[1], 5_000),
    ];
    run_through(&store, api_url, &first, deadline).await?;
    // A refund of part of a charge the fleet made.
    let charged = store
        .get(OpRef::new(TENANT, first[0].intent.operation_id.as_str()))
        .await?
        .and_then(|row| row.external_id)
        .ok_or_else(|| anyhow::anyhow!("the first charge made no PaymentIntent"))?;
    let second = vec![refund(&charged, 2_500)];
    run_through(&store, api_url, &second, deadline).await?;
    let all: Vec<&DemoIntent> = first.iter().chain(&second).collect();
    report::print(&store, stripe, &all).await
}
