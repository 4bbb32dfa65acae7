//! fleetctl: parse, connect, dispatch.

use std::process::ExitCode;

use clap::Parser;
use fleet_broker::Publisher;
use fleet_store::Store;
use fleetctl::api_client::{ApiClient, ListQuery};
use fleetctl::args::{Database, Format};
use fleetctl::cli::{BrokerCommand, Cli, Command};
use fleetctl::decide::Decision;
use fleetctl::{
    broker_setup, completion, context, decide, demo, evidence, hash, history, inspect, key,
    operator, policy, principal, prune, submit, token, wait,
};

#[tokio::main]
async fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` are answers (on stdout, status 0); the rest are
            // usage errors, told apart from every other failure.
            let _ = e.print();
            return match e.use_stderr() {
                true => ExitCode::from(fleetctl::exit::Exit::Usage.status()),
                false => ExitCode::SUCCESS,
            };
        }
    };
    fleet_runtime::init_tracing_with_default(fleet_runtime::LogFormat::Text, "warn,lapin=off");
    match run(cli.command, cli.output.format()).await {
        Ok(code) => code,
        Err(e) => fleetctl::exit::report(&e),
    }
}

fn store(db: &Database) -> anyhow::Result<Store> {
    Ok(Store::connect(db.database_url.expose(), 2)?)
}

async fn run(command: Command, format: Format) -> anyhow::Result<ExitCode> {
    match command {
        Command::Migrate { db } => migrate(&db, format).await?,
        Command::Hash { file } => hash::run(&file, format)?,
        Command::Submit { file, amqp } => submit::run(&amqp.config(), &file, format).await?,
        Command::Supersede {
            operation_id,
            file,
            amqp,
        } => submit::supersede(&amqp.config(), &operation_id, &file, format).await?,
        Command::Approve {
            operation_id,
            hash,
            batch,
            key,
            api,
        } => {
            // Read before anything is asked of the API: a wrong path fails here.
            let key = key.as_deref().map(key::read_private).transpose()?;
            let client = ApiClient::from_args(&api)?;
            match (operation_id, hash, key.as_ref()) {
                (_, _, Some(key)) if !batch.is_empty() => {
                    fleetctl::batch::approve_batch(&client, &batch, key, format).await?
                }
                (Some(op), Some(hash), key) => {
                    decide::approve(&client, &op, &hash, key, format).await?
                }
                _ => anyhow::bail!("name an operation and its --hash, or --batch with --key"),
            }
        }
        Command::Reject {
            operation_id,
            reason,
            api,
        } => {
            let reject = Decision::Reject { reason: &reason };
            decide::send(&ApiClient::from_args(&api)?, &operation_id, reject, format).await?
        }
        Command::Show { operation_id, api } => {
            inspect::show(&ApiClient::from_args(&api)?, &operation_id, format).await?
        }
        Command::History { operation_id, api } => {
            history::show(&ApiClient::from_args(&api)?, &operation_id, format).await?
        }
        Command::Evidence { operation_id, api } => {
            evidence::fetch(&ApiClient::from_args(&api)?, &operation_id).await?
        }
        Command::Verify {
            file,
            key_id,
            public_key,
        } => {
            let trust = evidence::trust_of(key_id.as_deref(), public_key.as_deref())?;
            return evidence::run_verify(&file, trust);
        }
        Command::List {
            status,
            approval_status,
            limit,
            cursor,
            api,
        } => {
            let query = ListQuery {
                status,
                approval_status,
                limit: Some(limit),
                cursor,
            };
            inspect::list(&ApiClient::from_args(&api)?, &query, format).await?
        }
        Command::Wait {
            operation_id,
            wait_for,
            timeout,
            api,
        } => {
            let client = ApiClient::from_args(&api)?;
            return wait::run(&client, &operation_id, wait_for, timeout, format).await;
        }
        Command::Resolve {
            operation_id,
            outcome,
            external_id,
            evidence,
            api,
        } => {
            let resolve = Decision::Resolve {
                outcome: &outcome,
                external_id: external_id.as_deref(),
                evidence: &evidence,
            };
            decide::send(&ApiClient::from_args(&api)?, &operation_id, resolve, format).await?
        }
        Command::Dispute {
            operation_id,
            reason,
            api,
        } => {
            let dispute = Decision::Dispute { reason: &reason };
            decide::send(&ApiClient::from_args(&api)?, &operation_id, dispute, format).await?
        }
        Command::Reconcile {
            operation_id,
            tenant,
            conn,
        } => {
            let store = store(&conn.db)?;
            let op = operator::pick(&store, &operation_id, tenant.as_deref()).await?;
            let publisher = Publisher::connect(&conn.broker()).await?;
            operator::reconcile(&publisher, op.op(), format).await?;
            publisher.close().await;
        }
        Command::Token { command, db } => token::run(&store(&db)?, command, format).await?,
        Command::Prune {
            outbox_retention_s,
            webhook_retention_s,
            batch,
            db,
        } => {
            let retention = prune::Retention {
                outbox_s: outbox_retention_s,
                webhook_s: webhook_retention_s,
                batch,
            };
            prune::run(&store(&db)?, retention, format).await?
        }
        Command::Broker {
            command: BrokerCommand::Setup { args, amqp },
        } => broker_setup::run(&amqp.config(), &args, format).await?,
        Command::Policy { command, db } => policy::run(&store(&db)?, command, format).await?,
        Command::Principal { command, conn } => {
            principal::run(&store(&conn.db)?, &conn.broker(), command, format).await?
        }
        Command::Key { command } => key::run(command, format).await?,
        Command::Mandate { command } => fleetctl::mandate::run(command, format).await?,
        Command::DeadLetters { command } => fleetctl::dead_letters::run(command, format).await?,
        Command::Context { command } => context::run(command, format)?,
        Command::Completion { shell } => completion::run(shell),
        Command::Demo { args, conn } => demo::run(&conn, args).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// With `-o json`: `{"database", "roles", "passwords_set"}` (the database URL without
/// its password, the login role of each component, those whose password was set).
async fn migrate(db: &Database, format: Format) -> anyhow::Result<()> {
    let url = db.database_url.expose();
    fleet_store::create_database_if_missing(url).await?;
    fleet_store::migrate(url).await?;
    // A derived prefix may carry a hash: say the names the components must log in as.
    let prefix = fleet_store::RolePrefix::of(url)?;
    let passwords: Vec<_> = fleet_store::DbRole::ALL
        .into_iter()
        .filter_map(|r| Some((r, r.password_from_env()?)))
        .collect();
    fleet_store::set_role_passwords(url, &passwords).await?;
    let set: Vec<String> = passwords
        .iter()
        .map(|(r, _)| r.login_name(&prefix))
        .collect();
    if format == Format::Json {
        let roles: serde_json::Map<String, serde_json::Value> = fleet_store::DbRole::ALL
            .into_iter()
            .map(|r| (r.component().to_owned(), r.login_name(&prefix).into()))
            .collect();
        fleetctl::output::json(&serde_json::json!({
            "database": db.database_url.to_string(),
            "roles": roles,
            "passwords_set": set,
        }));
        return Ok(());
    }
    println!("migrated {}", db.database_url);
    println!(
        "the deployment's database roles: {}__<component> ({})",
        prefix.as_str(),
        fleet_store::DbRole::ALL.map(|r| r.component()).join(", ")
    );
    for name in &set {
        println!("set the password of the database role {name}");
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
