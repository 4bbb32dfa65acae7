//! fleet-relay: publishes the outcome outbox to the `fleet.events` exchange.

use clap::Parser;
use fleet_relay::{RelayDeps, RelaySettings};
use fleet_runtime::CommonArgs;
use fleet_store::component;

#[derive(Parser)]
#[command(
    name = "fleet-relay",
    version,
    about = "Publishes outcome events from the outbox to fleet.events as CloudEvents"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    relay: RelaySettings,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // A channels file that cannot be used stops the start before anything connects.
    let notifier = fleet_relay::notifier(&cli.relay).map_err(anyhow::Error::msg)?;
    let boot = fleet_boot::start::<component::Relay>(&cli.common).await?;
    let deps = RelayDeps {
        store: boot.store.clone(),
        publisher: boot.publisher().await?,
        namespace: boot.broker.namespace.clone(),
        settings: cli.relay,
        notifier,
    };
    fleet_relay::run(deps, boot.shutdown.clone()).await;
    boot.finish().await;
    Ok(())
}

#[cfg(test)]
fleet_runtime::test_every_argument_has_help_text!(Cli);
