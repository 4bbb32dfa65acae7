//! Waiting on the rows, and the final table: what the log says next to what the provider
//! holds, so a reader can check "exactly once" with their own eyes.

use std::collections::BTreeMap;
use std::time::Duration;

use fleet_core::wording::describe;
use fleet_core::{OpKey, OpRef, Status};
use fleet_store::{OperationRow, Store};
use serde_json::{json, Value};
use tokio::time::{sleep, Instant};

use super::intents::Plan;
use crate::table::Table;

/// Polls until `done` holds for every operation, or fails at `deadline`.
pub async fn wait_until(
    store: &Store,
    ids: &[OpKey],
    deadline: Instant,
    done: impl Fn(Option<&OperationRow>) -> bool,
    what: &str,
) -> anyhow::Result<()> {
    loop {
        let mut waiting = 0;
        for id in ids {
            if !done(store.get(id.op()).await?.as_ref()) {
                waiting += 1;
            }
        }
        if waiting == 0 {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{waiting} operations are not {what} before the deadline"
        );
        sleep(Duration::from_millis(200)).await;
    }
}

/// Polls until the relay has published every outcome event, or fails at `deadline`.
pub async fn wait_for_events(store: &Store, deadline: Instant) -> anyhow::Result<()> {
    loop {
        let backlog = store.outbox_gauges().await?.backlog;
        if backlog == 0 {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{backlog} outcome events are not published before the deadline"
        );
        sleep(Duration::from_millis(200)).await;
    }
}

/// The effects the simulator holds for an operation, of every kind (payments, refunds,
/// deals, order transitions, ...).
async fn effects(client: &reqwest::Client, sim_url: &str, reference: &str) -> anyhow::Result<i64> {
    let v: Value = client
        .get(format!("{sim_url}/_sim/effects"))
        .query(&[("reference", reference)])
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let counts = v
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| *k != "reference");
    Ok(counts.filter_map(|(_, n)| n.as_i64()).sum())
}

/// `n` orders at `paid` in the simulator: their ids.
pub async fn seed_orders(sim_url: &str, n: usize) -> anyhow::Result<Vec<String>> {
    let client = reqwest::Client::new();
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let order: Value = client
            .post(format!("{sim_url}/_sim/orders"))
            .json(&json!({"status": "paid"}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        ids.push(
            order["id"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("the simulator answered an order without an id"))?
                .to_owned(),
        );
    }
    Ok(ids)
}

/// Moves an order as someone else would.
pub async fn move_order(sim_url: &str, order_id: &str, status: &str) -> anyhow::Result<()> {
    reqwest::Client::new()
        .post(format!("{sim_url}/_sim/orders/{order_id}/status"))
        .json(&json!({"status": status}))
        .send()
        .await?
        .error_for_status()?;
    Ok(())
}

/// Replaces `payee`'s bank account in the simulator's directory, as a persuaded vendor
/// contact would: its answer (the new version, the masked account).
pub async fn change_payee_account(sim_url: &str, payee: &str) -> anyhow::Result<Value> {
    Ok(reqwest::Client::new()
        .post(format!("{sim_url}/_sim/beneficiaries"))
        .json(
            &json!({"id": payee, "name": "Vendor 42 LLP", "country": "KZ",
                      "account_number": "KZ07 999K ZT00 0000 4321"}),
        )
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?)
}

/// What became of the payment to the payee whose account changed: the version approved,
/// what the payee is now, and where a person reads it.
async fn print_changed_payee(store: &Store, plan: &Plan, api_url: &str) -> anyhow::Result<()> {
    for intent in &plan.intents {
        let op = intent.intent.operation_id.as_str();
        let key = OpRef::new(&intent.intent.snapshot.tenant_id, op);
        let Some(row) = store.get(key).await? else {
            continue;
        };
        if row.payload["beneficiary_id"] != plan.changed_payee {
            continue;
        }
        let approved = row
            .payee
            .as_ref()
            .map_or(Value::Null, |p| p["version"].clone());
        let now = store
            .events(key)
            .await?
            .into_iter()
            .find_map(|e| e.evidence?.get("payee_changed").cloned());
        println!(
            "{op} ({}): approved for payee version {approved}; the account then changed to {} (version {}): {} {}, nothing paid; see {api_url}/console/operations/{op}",
            describe(row.action, row.target.as_deref(), &row.payload),
            now.as_ref()
                .and_then(|n| n["now"]["account"]["masked"].as_str())
                .unwrap_or("?"),
            now.as_ref().map_or("?".into(), |n| n["now"]["version"].to_string()),
            row.status,
            row.status_reason.map(fleet_core::Reason::as_str).unwrap_or(""),
        );
    }
    Ok(())
}

pub async fn print(
    store: &Store,
    plan: &Plan,
    (sim_url, api_url): (&str, &str),
    dead: &[(Vec<u8>, Option<String>)],
) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    println!();
    let mut table = Table::new(
        &[
            "OPERATION",
            "ACTION",
            "STATUS",
            "REASON",
            "EXTERNAL_ID",
            "EFFECTS",
            "WHAT",
        ],
        &[5],
    );
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    let mut violations = 0;
    for intent in &plan.intents {
        let op = intent.intent.operation_id.as_str();
        let row = store
            .get(OpRef::new(&intent.intent.snapshot.tenant_id, op))
            .await?
            .ok_or_else(|| anyhow::anyhow!("{op} vanished"))?;
        // The provider knows the operation by its stored key.
        let n = effects(&client, sim_url, row.idempotency_key.as_str()).await?;
        // Exactly once: one effect iff the log says succeeded, none otherwise.
        // (An escalated, non-final operation is waiting for a person, not a disagreement.)
        if row.status.is_final() && n != i64::from(row.status == Status::Succeeded) {
            violations += 1;
        }
        table.push(vec![
            op.to_owned(),
            row.action.to_string(),
            if row.escalated_at.is_some() {
                format!("{} (escalated)", row.status)
            } else {
                row.status.to_string()
            },
            row.error_code
                .as_deref()
                .or(row.status_reason.map(fleet_core::Reason::as_str))
                .unwrap_or("")
                .to_owned(),
            row.external_id.as_deref().unwrap_or("-").to_owned(),
            n.to_string(),
            describe(row.action, row.target.as_deref(), &row.payload),
        ]);
        let key = if row.escalated_at.is_some() {
            format!("{} escalated", row.status)
        } else {
            row.status.to_string()
        };
        *by_status.entry(key).or_default() += 1;
    }
    for line in table.lines() {
        println!("{line}");
    }
    println!();
    for intent in &plan.intents {
        let op = intent.intent.operation_id.as_str();
        let key = OpRef::new(&intent.intent.snapshot.tenant_id, op);
        let Some(row) = store.get(key).await? else {
            continue;
        };
        if row.signatures_required == 0 {
            continue;
        }
        let signed = store
            .signed_approvals(key, row.payload_hash.as_str())
            .await?;
        let signers: Vec<&str> = signed
            .approvals
            .iter()
            .filter(|a| a.signed.is_some())
            .map(|a| a.principal.as_str())
            .collect();
        println!(
            "{op} ({}): {} of {} approvals signed with the approvers' registered keys ({}); fleet-execute verified them before its call: {}",
            describe(row.action, row.target.as_deref(), &row.payload),
            signers.len(),
            row.signatures_required,
            signers.join(", "),
            row.status
        );
    }
    print_changed_payee(store, plan, api_url).await?;
    let summary: Vec<String> = by_status.iter().map(|(s, n)| format!("{s}: {n}")).collect();
    println!("final states: {}", summary.join(", "));
    for (_, reason) in dead.iter().filter(|(body, _)| *body == plan.invalid) {
        println!(
            "dead-lettered by prepare: the float-amount intent, reason {}",
            reason.as_deref().unwrap_or("(none)")
        );
    }
    println!(
        "provider effects match the log for {} of {} operations",
        plan.intents.len() - violations,
        plan.intents.len()
    );
    anyhow::ensure!(
        violations == 0,
        "{violations} operations disagree with the provider"
    );
    Ok(())
}
