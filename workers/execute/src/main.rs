//! fleet-execute: consumes `operations.execute`.

use clap::{CommandFactory, FromArgMatches, Parser};
use fleet_execute::ExecuteSettings;
use fleet_runtime::ProviderWorkerArgs;
use fleet_store::component;

#[derive(Parser)]
#[command(
    name = "fleet-execute",
    version,
    about = "Claims approved operations and calls their provider once"
)]
struct Cli {
    #[command(flatten)]
    worker: ProviderWorkerArgs,
    #[command(flatten)]
    execute: ExecuteSettings,
}

/// This worker's defaults for the consumer settings every worker shares: its handlers
/// spend most of their time waiting on the provider, and the claims and answers of the
/// handlers running at the same time share one statement and one commit (see
/// `batches.rs`), so more of them at once costs Postgres less per operation. The prefetch
/// keeps the next doorbells at hand for every slot. 128 handlers let a claim batch reach
/// the 64 doorbells one statement takes while the answers of the previous ones are being
/// recorded (docs/benchmark.md); a provider with a low rate limit wants fewer
/// (docs/scaling.md).
const CONCURRENCY: &str = "128";
const PREFETCH: &str = "256";

fn command() -> clap::Command {
    Cli::command()
        .mut_arg("concurrency", |a| a.default_value(CONCURRENCY))
        .mut_arg("prefetch", |a| a.default_value(PREFETCH))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::from_arg_matches(&command().get_matches())?;
    fleet_boot::run_provider_worker::<component::Execute, _, _, _>(
        cli.worker,
        cli.execute,
        fleet_execute::run,
    )
    .await
}

#[cfg(test)]
mod tests {
    fleet_runtime::test_every_argument_has_help_text!(super::Cli);

    #[test]
    fn execute_runs_more_handlers_at_once_than_the_shared_default_unless_told_otherwise() {
        use clap::FromArgMatches;
        let parse = |args: &[&str]| {
            super::Cli::from_arg_matches(&super::command().try_get_matches_from(args).unwrap())
                .unwrap()
        };
        if std::env::var_os("CONCURRENCY").is_none() && std::env::var_os("PREFETCH").is_none() {
            let cli = parse(&["fleet-execute"]);
            assert_eq!(
                (cli.worker.common.concurrency, cli.worker.common.prefetch),
                (128, 256)
            );
        }
        let cli = parse(&["fleet-execute", "--concurrency=5", "--prefetch=7"]);
        assert_eq!(
            (cli.worker.common.concurrency, cli.worker.common.prefetch),
            (5, 7)
        );
    }
}
