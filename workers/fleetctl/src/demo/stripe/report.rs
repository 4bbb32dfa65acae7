//! The Stripe mode's table: each operation's outcome beside the Stripe object carrying its
//! key, read from the double, so a reader can check "exactly once" against Stripe's own
//! records.

use fleet_core::wording::describe;
use fleet_core::{OpRef, Status};
use fleet_store::Store;
use serde_json::Value;

use super::double::StripeDouble;
use super::TENANT;
use crate::demo::intents::DemoIntent;

/// The fleet's state a Stripe object's status means: a declined charge's PaymentIntent
/// asks for another payment method, so the charge failed.
fn outcome_of(object: &Value) -> Option<Status> {
    match object["status"].as_str()? {
        "succeeded" => Some(Status::Succeeded),
        "requires_payment_method" | "canceled" | "failed" => Some(Status::Failed),
        _ => None,
    }
}

pub async fn print(
    store: &Store,
    stripe: &StripeDouble,
    intents: &[&DemoIntent],
) -> anyhow::Result<()> {
    println!();
    let mut table = crate::table::Table::new(
        &[
            "OPERATION",
            "ACTION",
            "STATUS",
            "CODE",
            "STRIPE_OBJECT",
            "STRIPE_STATUS",
            "WHAT",
        ],
        &[],
    );
    let mut agree = 0;
    for intent in intents {
        let op = intent.intent.operation_id.as_str();
        let row = store
            .get(OpRef::new(TENANT, op))
            .await?
            .ok_or_else(|| anyhow::anyhow!("{op} vanished"))?;
        let objects = stripe.carrying(row.idempotency_key.as_str()).await?;
        let object = objects.first();
        // Exactly once: one object carrying the key, in the state the fleet ended in.
        if objects.len() == 1 && object.and_then(outcome_of) == Some(row.status) {
            agree += 1;
        }
        let status = if row.escalated_at.is_some() {
            format!("{} (escalated)", row.status)
        } else {
            row.status.to_string()
        };
        let stripe_id = match objects.len() {
            0 => "-".to_owned(),
            1 => object
                .and_then(|o| o["id"].as_str())
                .unwrap_or("?")
                .to_owned(),
            n => format!("{n} objects!"),
        };
        table.push(vec![
            op.to_owned(),
            row.action.to_string(),
            status,
            row.error_code.as_deref().unwrap_or("").to_owned(),
            stripe_id,
            object
                .and_then(|o| o["status"].as_str())
                .unwrap_or("-")
                .to_owned(),
            describe(row.action, row.target.as_deref(), &row.payload),
        ]);
    }
    for line in table.lines() {
        println!("{line}");
    }
    println!(
        "Stripe objects match the fleet's outcomes for {agree} of {} operations",
        intents.len()
    );
    anyhow::ensure!(
        agree == intents.len(),
        "{} operations disagree with Stripe",
        intents.len() - agree
    );
    Ok(())
}
