//! fleet-execute: consumes `operations.execute`.

use std::sync::Arc;

use clap::Parser;
use fleet_broker::Publisher;
use fleet_execute::{ExecuteDeps, ExecuteSettings};
use fleet_providers::ProviderConfigs;
use fleet_runtime::{admin_addrs, CommonArgs, ProviderArgs};

#[derive(Parser)]
#[command(name = "fleet-execute", version, about = "Claims approved operations and calls their provider once")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    providers: ProviderArgs,
    #[command(flatten)]
    execute: ExecuteSettings,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start("execute", &cli.common, admin_addrs::EXECUTE).await?;
    let deps = ExecuteDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        publisher: Publisher::connect_with_health(&boot.broker, &boot.broker_health).await?,
        providers: Arc::new(ProviderConfigs::from_args(&cli.providers).map_err(anyhow::Error::msg)?.connect()?),
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
        assert_eq!(fleet_runtime::undocumented_arguments(&super::Cli::command()), Vec::<String>::new());
    }
}
