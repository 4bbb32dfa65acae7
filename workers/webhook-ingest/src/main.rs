//! fleet-webhook-ingest: consumes `webhooks.ingest`.

use clap::Parser;
use fleet_runtime::{admin_addrs, CommonArgs};
use fleet_webhook_ingest::WebhookDeps;

#[derive(Parser)]
#[command(name = "fleet-webhook-ingest", about = "Receives signed provider webhooks")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start("webhook-ingest", &cli.common, admin_addrs::WEBHOOK_INGEST).await?;
    let deps = WebhookDeps { broker: boot.broker.clone(), health: boot.broker_health.clone(), concurrency: cli.common.concurrency };
    fleet_webhook_ingest::run(deps, boot.shutdown.clone()).await?;
    boot.finish().await;
    Ok(())
}
