//! `fleetctl demo`: the whole pipeline on one machine, with real processes. It migrates,
//! starts the provider simulator, the four workers, the HTTP API and the event relay,
//! submits the seed example (invoice inv_9182, 12,500.00 KZT to vendor_77) through the API
//! as an agent would and a few dozen more intents to the queue, approves them through the
//! API the way people would (two distinct approvers for the large KZT payment, each
//! signing with a key generated into a directory of the demo's own and registered), waits
//! until every operation is final and its outcome events are published, and prints a
//! table of final states next to the effects the provider holds. Besides payments it
//! moves a few orders from `paid` to `fulfilled`, one of which someone else puts on hold
//! before it runs (cancelled: a new decision is needed), and sends two contracts, which
//! the e-signature provider settles by signed webhooks. One payment's payee has its bank
//! account replaced after the approver was shown it: the provider refuses the payment on
//! the payee version the approval bound, and the operation ends cancelled
//! (`beneficiary_changed`) with nothing paid.
//!
//! `--provider stripe` runs card charges and refunds against a local Stripe double instead
//! ([`stripe`]).
//!
//! Either runs in a database and a broker namespace of its own ([`sandbox`]), removed at the
//! end unless `--keep` is given.

mod api;
mod intents;
mod processes;
mod report;
mod sandbox;
mod stripe;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use fleet_broker::{Publisher, Queue};
use fleet_core::{OpKey, OpRef};
use fleet_store::Store;
use serde_json::{json, Value};

use crate::args::Connection;
use processes::Fleet;

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Intents to submit besides the seed example.
    #[arg(long, default_value_t = 40)]
    pub count: usize,
    /// Where the worker binaries are [default: next to fleetctl].
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Where each process writes its log.
    #[arg(long, default_value = "target/demo-logs")]
    pub log_dir: PathBuf,
    /// Address of the provider simulator the demo starts.
    #[arg(long, default_value = "127.0.0.1:8090")]
    pub sim_addr: String,
    /// Address of the HTTP API the demo starts.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub api_addr: String,
    /// How long to wait for every operation to become final.
    #[arg(long, default_value_t = 120)]
    pub timeout_s: u64,
    /// How long the simulator holds each webhook before sending it. With a fault that
    /// answers a committed payment with a 500, a delay lets the payment become `unknown`
    /// (and be reconciled) before its webhook settles it.
    #[arg(long, default_value_t = 0)]
    pub webhook_delay_ms: u64,
    /// The payments provider: the provider simulator (payments, orders, contracts, ...),
    /// or a local Stripe double (card charges and refunds only).
    #[arg(long, value_enum, default_value_t = DemoProvider::Simulator)]
    pub provider: DemoProvider,
    /// With `--provider stripe`: a Stripe-compatible API to use instead of the localstripe
    /// the demo starts itself.
    #[arg(long)]
    pub stripe_url: Option<String>,
    /// Keep the demo's own database and broker namespace at the end (both are printed at
    /// the start) instead of removing them.
    #[arg(long)]
    pub keep: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoProvider {
    Simulator,
    Stripe,
}

pub async fn run(conn: &Connection, args: DemoArgs) -> anyhow::Result<()> {
    let sandbox = sandbox::Sandbox::create(conn, args.keep).await?;
    let outcome = match args.provider {
        DemoProvider::Stripe => stripe::run(&sandbox.conn, &args).await,
        DemoProvider::Simulator => run_simulator(&sandbox.conn, &args).await,
    };
    sandbox.finish().await;
    outcome
}

async fn run_simulator(conn: &Connection, args: &DemoArgs) -> anyhow::Result<()> {
    with_fleet(conn, args, &[], |sim_url, api_url| async move {
        drive(conn, args, &sim_url, &api_url).await
    })
    .await
}

/// Starts the fleet's processes with the `payments` provider's settings, runs `drive`
/// with the simulator's and the API's URLs, then stops them, whatever `drive` returned,
/// and says where their logs are.
async fn with_fleet<F, Fut>(
    conn: &Connection,
    args: &DemoArgs,
    payments: &[(&str, &str)],
    drive: F,
) -> anyhow::Result<()>
where
    F: FnOnce(String, String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let bin_dir = crate::processes::bin_dir(args.bin_dir.as_deref())?;
    let mut fleet = Fleet::start(
        &bin_dir,
        &args.log_dir,
        conn,
        &args.sim_addr,
        &args.api_addr,
        args.webhook_delay_ms,
        payments,
    )
    .await?;
    let outcome = drive(fleet.sim_url().to_owned(), fleet.api_url().to_owned()).await;
    fleet.stop().await;
    println!("logs: {}", args.log_dir.display());
    outcome
}

/// Orders the demo moves from `paid` to `fulfilled`.
const ORDERS: usize = 3;

/// Approves (or rejects) every operation of the plan through the API, as the demo's
/// approvers; an operation whose policy asks for signed approvals gets signed ones.
async fn approve_all(
    store: &Store,
    api_url: &str,
    intents: &[intents::DemoIntent],
    tenant: &str,
    keys: &std::path::Path,
) -> anyhow::Result<()> {
    let approvers = api::approvers(store, api_url, tenant, keys).await?;
    for intent in intents {
        let op = intent.intent.operation_id.as_str();
        if intent.reject {
            approvers[0]
                .client
                .decide(op, "reject", json!({ "reason": "amount looks wrong" }))
                .await?;
            continue;
        }
        let sign = store
            .get(OpRef::new(&intent.intent.snapshot.tenant_id, op))
            .await?
            .is_some_and(|row| row.signatures_required > 0);
        let signed = if sign { ", each signed" } else { "" };
        // Each approver approves the hash they computed themselves from the intent, one
        // after the other, until the operation's quorum is reached.
        let hash = intent.intent.payload_hash.as_str();
        for (n, approver) in approvers.iter().enumerate() {
            let name = approver.name;
            let view = approver.approve(op, hash, sign).await?;
            if view.approval_status == fleet_core::ApprovalStatus::Approved {
                if n > 0 {
                    println!(
                        "{op} approved by {name}: {} of {} distinct approvers{signed}",
                        view.approvals_received, view.approvals_required
                    );
                }
                break;
            }
            anyhow::ensure!(
                n + 1 < approvers.len(),
                "{op} is still pending after every demo approver: {}",
                view.to_json()
            );
            println!(
                "{op} ({}) needs {} distinct approvers{signed}: {} of {} after {name}",
                amount(&intent.intent.snapshot.payload),
                view.approvals_required,
                view.approvals_received,
                view.approvals_required
            );
        }
    }
    println!(
        "approved {} and rejected {}",
        intents.iter().filter(|i| !i.reject).count(),
        intents.iter().filter(|i| i.reject).count()
    );
    Ok(())
}

/// A payment's amount as a person reads it (the demo's currencies have two decimals).
fn amount(payload: &Value) -> String {
    let minor = payload["amount_minor"].as_i64().unwrap_or(0);
    format!(
        "{}.{:02} {}",
        minor / 100,
        minor % 100,
        payload["currency"].as_str().unwrap_or("")
    )
}

async fn drive(
    conn: &Connection,
    args: &DemoArgs,
    sim_url: &str,
    api_url: &str,
) -> anyhow::Result<()> {
    let store = Store::connect(conn.db.database_url.expose(), 4)?;
    let broker = conn.broker();
    let publisher = Publisher::connect(&broker).await?;
    let orders = report::seed_orders(sim_url, ORDERS).await?;
    let plan = intents::plan(args.count, &orders);

    let (seed, rest) = plan
        .intents
        .split_first()
        .expect("the plan starts with the seed example");
    api::submit(&store, api_url, seed).await?;
    api::refuse_lookalike(&store, api_url, seed).await?;
    for intent in rest {
        publisher
            .publish(Queue::IntentsPrepare, &intent.bytes)
            .await?;
    }
    publisher
        .publish(Queue::IntentsPrepare, &plan.invalid)
        .await?;
    println!(
        "submitted {} intents and 1 invalid message to the queue",
        rest.len()
    );

    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout_s);
    let ids: Vec<OpKey> = plan
        .intents
        .iter()
        .map(|i| {
            OpKey::new(
                &*i.intent.snapshot.tenant_id,
                i.intent.operation_id.as_str(),
            )
        })
        .collect();
    report::wait_until(&store, &ids, deadline, |row| row.is_some(), "prepared").await?;
    // Someone else puts the last order on hold after the agent read it at `paid`.
    if let Some(moved) = orders.last() {
        report::move_order(sim_url, moved, "on_hold").await?;
        println!("order {moved} was put on hold by someone else before its change was approved");
    }
    // "Our new account": the payee's bank details change after the approver was shown
    // them (the page shows the evidence kept at intake; the approval binds its version).
    let changed = report::change_payee_account(sim_url, plan.changed_payee).await?;
    println!(
        "payee {} now has account {} (version {}): changed after its payment was prepared and shown to the approver",
        plan.changed_payee,
        changed["account"]["masked"].as_str().unwrap_or("?"),
        changed["version"]
    );

    // The approvers' private keys live in a directory of this run's own, removed at the
    // end (their public keys stay registered, as the history cites them).
    let keys = std::env::temp_dir().join(format!("fleet-demo-keys-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&keys)?;
    let approved = approve_all(
        &store,
        api_url,
        &plan.intents,
        &seed.intent.snapshot.tenant_id,
        &keys,
    )
    .await;
    let _ = std::fs::remove_dir_all(&keys);
    approved?;

    // Settled for the machine: final, or escalated to a person (reported as such).
    let settled = |row: Option<&fleet_store::OperationRow>| {
        row.is_some_and(|r| r.status.is_final() || r.escalated_at.is_some())
    };
    report::wait_until(&store, &ids, deadline, settled, "final or escalated").await?;
    report::wait_for_events(&store, deadline).await?;
    println!(
        "outcome events: every one published to {}",
        broker.events_exchange_name()
    );
    let dead = fleet_broker::dead_letters(&broker, Queue::IntentsPrepare).await?;
    report::print(&store, &plan, (sim_url, api_url), &dead).await?;
    publisher.close().await;
    Ok(())
}
