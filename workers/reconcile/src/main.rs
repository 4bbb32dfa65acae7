//! fleet-reconcile: consumes `operations.reconcile`, sweeps, computes the fleet gauges.

use std::sync::Arc;

use clap::Parser;
use fleet_broker::Publisher;
use fleet_providers::ProviderConfigs;
use fleet_reconcile::{ReconcileDeps, ReconcileSettings};
use fleet_runtime::{admin_addrs, CommonArgs, ProviderArgs, ProviderRateArgs};
use fleet_store::ProviderSchedule;

#[derive(Parser)]
#[command(
    name = "fleet-reconcile",
    version,
    about = "Reconciles uncertain operations with their provider"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    providers: ProviderArgs,
    #[command(flatten)]
    rates: ProviderRateArgs,
    #[command(flatten)]
    reconcile: ReconcileSettings,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start::<fleet_store::component::Reconcile>(
        "reconcile",
        &cli.common,
        admin_addrs::RECONCILE,
    )
    .await?;
    let deps = ReconcileDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        publisher: Publisher::connect_with_health(&boot.broker, &boot.broker_health).await?,
        providers: Arc::new(
            ProviderConfigs::from_args(&cli.providers)
                .map_err(anyhow::Error::msg)?
                .connect_paced(ProviderSchedule::pacers(&boot.store, &cli.rates.rates()))?,
        ),
        settings: cli.reconcile,
        concurrency: cli.common.concurrency,
    };
    fleet_reconcile::run(deps, boot.shutdown.clone()).await?;
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
}
