//! fleet-api: the HTTP API for agents and approvers (`API_ADDR`), with /metrics, /livez
//! and /readyz on `ADMIN_ADDR`.

use anyhow::Context;
use clap::Parser;
use fleet_api::console::{Console, ConsoleSettings};
use fleet_api::evidence_key::{EvidenceKeySettings, EvidenceKeys};
use fleet_api::{ApiDeps, ApiSettings};
use fleet_core::catalogue::provider_spec::CRM;
use fleet_runtime::{CommonArgs, IntakeArgs, ProviderSettings};
use fleet_store::component;

#[derive(Parser)]
#[command(
    name = "fleet-api",
    version,
    about = "The HTTP API: agents submit intents and follow operations, people decide on them"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Intents are checked as prepare checks them; the CRM among the providers is the one
    /// the console reads a deal's current values from.
    #[command(flatten)]
    intake: IntakeArgs,
    #[command(flatten)]
    api: ApiSettings,
    #[command(flatten)]
    console: ConsoleSettings,
    /// The key evidence bundles are signed with.
    #[command(flatten)]
    evidence: EvidenceKeySettings,
}

/// The CRM client the console reads a deal's current values with: a page waits for it,
/// so at most two seconds.
fn console_crm(settings: &ProviderSettings) -> Option<fleet_providers::CrmClient> {
    let mut config = fleet_providers::Endpoint::from_settings(settings);
    config.timeout_ms = config.timeout_ms.min(2_000);
    fleet_providers::CrmClient::new(config).ok()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Before anything connects: a key file refused or malformed is said at once.
    let evidence = EvidenceKeys::load(&cli.evidence).map_err(anyhow::Error::msg)?;
    // The broker carries the execute bell an approval rings; /readyz includes it.
    let boot = fleet_boot::start::<component::Api>(&cli.common).await?;
    let intake = boot.paced_intake_rules(&cli.intake)?;
    let publisher = boot.publisher().await?;
    let listener = tokio::net::TcpListener::bind(cli.api.api_addr)
        .await
        .with_context(|| format!("binding the API address {}", cli.api.api_addr))?;
    let public_url = cli
        .api
        .public_url(listener.local_addr()?)
        .map_err(anyhow::Error::msg)?;
    let console = Console::from_settings(
        &cli.console,
        public_url.as_str(),
        console_crm(cli.intake.providers.get(CRM.name)),
    )
    .map_err(anyhow::Error::msg)?;
    let deps = ApiDeps {
        store: boot.store.clone(),
        publisher,
        intake,
        settings: cli.api,
        listener,
        console,
        evidence,
    };
    boot.serve(|shutdown| fleet_api::run(deps, shutdown)).await
}

#[cfg(test)]
fleet_runtime::test_every_argument_has_help_text!(Cli);
