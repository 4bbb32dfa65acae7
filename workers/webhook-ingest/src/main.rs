//! fleet-webhook-ingest: receives signed provider webhooks (`WEBHOOK_ADDR`) and consumes
//! `webhooks.ingest`; `WEBHOOK_MODE` picks one half or both.

use anyhow::Context;
use clap::Parser;
use fleet_runtime::CommonArgs;
use fleet_store::component;
use fleet_webhook_ingest::{WebhookDeps, WebhookSettings};

#[derive(Parser)]
#[command(
    name = "fleet-webhook-ingest",
    version,
    about = "Receives signed provider webhooks and applies what they allow"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    webhook: WebhookSettings,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Refuse bad secrets before anything starts (both halves verify signatures); the
    // error never repeats a secret.
    cli.webhook.secrets()?;
    cli.webhook.stripe_secret()?;
    let boot = fleet_boot::start::<component::WebhookIngest>(&cli.common).await?;
    let listener = match cli.webhook.mode.receives() {
        true => Some(
            tokio::net::TcpListener::bind(cli.webhook.webhook_addr)
                .await
                .with_context(|| {
                    format!("binding the webhook address {}", cli.webhook.webhook_addr)
                })?,
        ),
        false => None,
    };
    let deps = WebhookDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        readiness: boot.readiness.clone(),
        settings: cli.webhook,
        listener,
        concurrency: cli.common.concurrency,
    };
    boot.serve(|shutdown| fleet_webhook_ingest::run(deps, shutdown))
        .await
}

#[cfg(test)]
fleet_runtime::test_every_argument_has_help_text!(Cli);
