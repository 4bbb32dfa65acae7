//! fleet-reconcile: consumes `operations.reconcile`, sweeps, computes the fleet gauges.

use clap::Parser;
use fleet_reconcile::{ReconcileDeps, ReconcileSettings};
use fleet_runtime::{CommonArgs, ProviderArgs, ProviderRateArgs};
use fleet_store::component;

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
    let boot = fleet_boot::start::<component::Reconcile>(&cli.common).await?;
    let deps = ReconcileDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        publisher: boot.publisher().await?,
        providers: boot.paced_providers(&cli.providers, &cli.rates)?,
        settings: cli.reconcile,
        concurrency: cli.common.concurrency,
    };
    boot.serve(|shutdown| fleet_reconcile::run(deps, shutdown))
        .await
}

#[cfg(test)]
fleet_runtime::test_every_argument_has_help_text!(Cli);
