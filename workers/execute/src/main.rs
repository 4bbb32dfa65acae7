//! fleet-execute: consumes `operations.execute`.

use clap::{CommandFactory, FromArgMatches, Parser};
use fleet_broker::Publisher;
use fleet_core::reconcile::ProviderContract;
use fleet_execute::{ExecuteDeps, ExecuteSettings};
use fleet_providers::{CrmClient, CrmConfig, PaymentsClient, PaymentsConfig};
use fleet_runtime::{admin_addrs, CommonArgs, CrmArgs, PaymentsArgs};

#[derive(Parser)]
#[command(
    name = "fleet-execute",
    version,
    about = "Claims approved operations and calls their provider once"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    payments: PaymentsArgs,
    #[command(flatten)]
    crm: CrmArgs,
    #[command(flatten)]
    execute: ExecuteSettings,
}

/// This worker's defaults for the consumer settings every worker shares: its handlers
/// spend most of their time waiting on the provider, and the claims and answers of the
/// handlers running at the same time share one statement and one commit (see
/// `batches.rs`), so more of them at once costs Postgres less per operation. The prefetch
/// keeps the next doorbells at hand for every slot.
const CONCURRENCY: &str = "64";
const PREFETCH: &str = "128";

fn command() -> clap::Command {
    Cli::command()
        .mut_arg("concurrency", |a| a.default_value(CONCURRENCY))
        .mut_arg("prefetch", |a| a.default_value(PREFETCH))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::from_arg_matches(&command().get_matches())?;
    let boot = fleet_boot::start("execute", &cli.common, admin_addrs::EXECUTE).await?;
    let deps = ExecuteDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        publisher: Publisher::connect_with_health(&boot.broker, &boot.broker_health).await?,
        payments: PaymentsClient::new(PaymentsConfig::from_args(&cli.payments))?,
        crm: CrmClient::new(CrmConfig::from_args(&cli.crm))?,
        crm_contract: ProviderContract {
            search_lag_ms: cli.crm.crm_search_lag_ms,
            max_request_ms: cli.crm.crm_max_request_s.saturating_mul(1000),
            key_retention_ms: u64::MAX,
            escalate_after_failed_lookups: u32::MAX,
        },
        payments_contract: ProviderContract {
            search_lag_ms: cli.payments.payments_search_lag_ms,
            max_request_ms: cli.payments.payments_max_request_s.saturating_mul(1000),
            key_retention_ms: cli.payments.payments_key_retention_s.saturating_mul(1000),
            escalate_after_failed_lookups: u32::MAX,
        },
        settings: cli.execute,
        concurrency: cli.common.concurrency,
    };
    fleet_execute::run(deps, boot.shutdown.clone()).await?;
    boot.finish().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn every_argument_has_help_text() {
        assert_eq!(
            fleet_runtime::undocumented_arguments(&super::Cli::command()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn execute_runs_more_handlers_at_once_than_the_shared_default_unless_told_otherwise() {
        use clap::FromArgMatches;
        let parse = |args: &[&str]| {
            super::Cli::from_arg_matches(&super::command().try_get_matches_from(args).unwrap())
                .unwrap()
        };
        if std::env::var_os("CONCURRENCY").is_none() && std::env::var_os("PREFETCH").is_none() {
            let cli = parse(&["fleet-execute"]);
            assert_eq!((cli.common.concurrency, cli.common.prefetch), (64, 128));
        }
        let cli = parse(&["fleet-execute", "--concurrency=5", "--prefetch=7"]);
        assert_eq!((cli.common.concurrency, cli.common.prefetch), (5, 7));
    }
}
