//! fleet-prepare: consumes `intents.prepare`.

use clap::Parser;
use fleet_runtime::{admin_addrs, CommonArgs};

#[derive(Parser)]
#[command(name = "fleet-prepare", about = "Validates intent.v1 messages and stores pending-approval operations")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start("prepare", &cli.common, admin_addrs::PREPARE).await?;
    let deps = fleet_prepare::PrepareDeps { store: boot.store.clone(), broker: boot.broker.clone(), health: boot.broker_health.clone(), concurrency: cli.common.concurrency };
    fleet_prepare::run(deps, boot.shutdown.clone()).await?;
    boot.finish().await;
    Ok(())
}
