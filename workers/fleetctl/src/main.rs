//! fleetctl: parse, connect, dispatch.

use clap::Parser;
use fleet_broker::Publisher;
use fleet_store::Store;
use fleetctl::cli::{Cli, Command};
use fleetctl::{approval, bench, demo, hash, inspect, operator, principal, submit, token};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    fleet_runtime::init_tracing_with_default(fleet_runtime::LogFormat::Text, "warn,lapin=off");
    let db = cli.conn.database_url.expose();
    let store = || Store::connect(db, 2);
    match cli.command {
        Command::Migrate => {
            fleet_store::create_database_if_missing(db).await?;
            fleet_store::migrate(db).await?;
            println!("migrated {}", cli.conn.database_url);
        }
        Command::Hash { file } => hash::run(&file)?,
        Command::Submit { file } => submit::run(&cli.conn.broker(), &file).await?,
        Command::Supersede { operation_id, file } => submit::supersede(&cli.conn.broker(), &operation_id, &file).await?,
        Command::Approve { operation_id, hash, by } => {
            let publisher = Publisher::connect(&cli.conn.broker()).await?;
            approval::approve(&store()?, &publisher, &operation_id, &hash, &by).await?;
            publisher.close().await;
        }
        Command::Reject { operation_id, by, reason } => approval::reject(&store()?, &operation_id, &by, &reason).await?,
        Command::Show { operation_id, json } => inspect::show(&store()?, &operation_id, json).await?,
        Command::List { status, escalated, limit, json } => inspect::list(&store()?, status.as_deref(), escalated, limit, json).await?,
        Command::Resolve { operation_id, outcome, external_id, evidence, by } => {
            let r = operator::Resolve { op: &operation_id, outcome, external_id: external_id.as_deref(), evidence: &evidence, by: &by };
            operator::resolve(&store()?, r).await?
        }
        Command::Dispute { operation_id, by, reason } => operator::dispute(&store()?, &operation_id, &by, &reason).await?,
        Command::Reconcile { operation_id } => {
            let publisher = Publisher::connect(&cli.conn.broker()).await?;
            operator::reconcile(&publisher, &operation_id).await?;
            publisher.close().await;
        }
        Command::Token { command } => token::run(&store()?, command).await?,
        Command::Principal { command } => principal::run(&store()?, command).await?,
        Command::Demo(args) => demo::run(&cli.conn, args).await?,
        Command::Bench(args) => bench::run(&cli.conn, args).await?,
    }
    Ok(())
}
