//! fleet-reconcile: consumes `operations.reconcile` and computes the fleet-wide gauges.

use clap::Parser;
use fleet_reconcile::{ReconcileDeps, ReconcileSettings};
use fleet_runtime::{admin_addrs, CommonArgs};

#[derive(Parser)]
#[command(name = "fleet-reconcile", about = "Reconciles uncertain operations with their provider")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    reconcile: ReconcileSettings,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start("reconcile", &cli.common, admin_addrs::RECONCILE).await?;
    let deps = ReconcileDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        settings: cli.reconcile,
        concurrency: cli.common.concurrency,
    };
    fleet_reconcile::run(deps, boot.shutdown.clone()).await?;
    boot.finish().await;
    Ok(())
}
