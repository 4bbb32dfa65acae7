//! fleetctl: parse, connect, dispatch.

use clap::Parser;
use fleet_broker::Publisher;
use fleet_store::Store;
use fleetctl::cli::{BrokerCommand, Cli, Command};
use fleetctl::decide::{self, DecisionClient};
use fleetctl::key::{self, KeyCommand};
use fleetctl::{broker_setup, demo, hash, inspect, operator, principal, submit, token};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    restore_default_sigpipe();
    let cli = Cli::parse();
    fleet_runtime::init_tracing_with_default(fleet_runtime::LogFormat::Text, "warn,lapin=off");
    let db = cli.conn.database_url.expose();
    let store = || Store::connect(db, 2);
    match cli.command {
        Command::Migrate => {
            fleet_store::create_database_if_missing(db).await?;
            fleet_store::migrate(db).await?;
            println!("migrated {}", cli.conn.database_url);
            let passwords: Vec<_> = fleet_store::DbRole::ALL
                .into_iter()
                .filter_map(|r| Some((r, r.password_from_env()?)))
                .collect();
            fleet_store::set_role_passwords(db, &passwords).await?;
            let prefix = fleet_store::RolePrefix::of(db)?;
            for (role, _) in &passwords {
                println!(
                    "set the password of the database role {}",
                    role.login_name(&prefix)
                );
            }
        }
        Command::Hash { file } => hash::run(&file)?,
        Command::Submit { file } => submit::run(&cli.conn.broker(), &file).await?,
        Command::Supersede { operation_id, file } => {
            submit::supersede(&cli.conn.broker(), &operation_id, &file).await?
        }
        Command::Approve {
            operation_id,
            hash,
            key,
            api,
        } => {
            // Read before anything is asked of the API: a wrong path fails here.
            let key = key.as_deref().map(key::read_private).transpose()?;
            let client = DecisionClient::from_args(&api)?;
            decide::approve(&client, &operation_id, &hash, key.as_ref()).await?
        }
        Command::Reject {
            operation_id,
            reason,
            api,
        } => decide::reject(&DecisionClient::from_args(&api)?, &operation_id, &reason).await?,
        Command::Show {
            operation_id,
            tenant,
            output,
        } => {
            let store = store()?;
            let op = inspect::pick(&store, &operation_id, tenant.as_deref()).await?;
            inspect::show(&store, op.op(), output.format()).await?
        }
        Command::List {
            status,
            escalated,
            limit,
            output,
        } => inspect::list(&store()?, status, escalated, limit, output.format()).await?,
        Command::Resolve {
            operation_id,
            outcome,
            external_id,
            evidence,
            api,
        } => {
            decide::resolve(
                &DecisionClient::from_args(&api)?,
                &operation_id,
                &outcome,
                external_id.as_deref(),
                &evidence,
            )
            .await?
        }
        Command::Dispute {
            operation_id,
            reason,
            api,
        } => decide::dispute(&DecisionClient::from_args(&api)?, &operation_id, &reason).await?,
        Command::Reconcile {
            operation_id,
            tenant,
        } => {
            let store = store()?;
            let op = inspect::pick(&store, &operation_id, tenant.as_deref()).await?;
            let publisher = Publisher::connect(&cli.conn.broker()).await?;
            operator::reconcile(&publisher, op.op()).await?;
            publisher.close().await;
        }
        Command::Token { command } => token::run(&store()?, command).await?,
        Command::Broker {
            command: BrokerCommand::Setup(args),
        } => broker_setup::run(&cli.conn.broker(), &args).await?,
        Command::Principal { command } => {
            principal::run(&store()?, &cli.conn.broker(), command).await?
        }
        // Generating a key pair touches no database.
        Command::Key {
            command: KeyCommand::Generate { out },
        } => key::generate(&out)?,
        Command::Key { command } => key::run(&store()?, command).await?,
        Command::Demo(args) => demo::run(&cli.conn, args).await?,
    }
    Ok(())
}

/// `fleetctl list | head -2`: when the reader goes away, end quietly as every Unix tool
/// does. Rust ignores SIGPIPE, so a write to a closed pipe would be an error, and
/// `println!` panics on it (exit 101 and a backtrace hint) instead.
fn restore_default_sigpipe() {
    // SAFETY: only the process-wide disposition of one signal is set back to its default;
    // no handler runs, so no code of ours executes in signal context.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
