//! fleet-reconcile: consumes `operations.reconcile`, sweeps, computes the fleet gauges.

use clap::Parser;
use fleet_reconcile::ReconcileSettings;
use fleet_runtime::ProviderWorkerArgs;
use fleet_store::component;

#[derive(Parser)]
#[command(
    name = "fleet-reconcile",
    version,
    about = "Reconciles uncertain operations with their provider"
)]
struct Cli {
    #[command(flatten)]
    worker: ProviderWorkerArgs,
    #[command(flatten)]
    reconcile: ReconcileSettings,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    fleet_boot::run_provider_worker::<component::Reconcile, _, _, _>(
        cli.worker,
        cli.reconcile,
        fleet_reconcile::run,
    )
    .await
}

#[cfg(test)]
fleet_runtime::test_every_argument_has_help_text!(Cli);
