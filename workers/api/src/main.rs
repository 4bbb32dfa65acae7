//! fleet-api: the HTTP API for agents (`API_ADDR`), with /metrics, /livez and /readyz on
//! `ADMIN_ADDR`.

use anyhow::Context;
use clap::Parser;
use fleet_api::{ApiDeps, ApiSettings};
use fleet_prepare::ProviderCapabilities;
use fleet_runtime::{admin_addrs, CommonArgs, CrmArgs, PaymentsArgs};

#[derive(Parser)]
#[command(
    name = "fleet-api",
    version,
    about = "The HTTP API for agents: submit intents, follow operations"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Only CRM_CAPABILITIES matters here: intents are checked as prepare checks them.
    #[command(flatten)]
    crm: CrmArgs,
    /// Only PAYMENTS_KEY_RETENTION_S matters here: an approval may not outlive the key.
    #[command(flatten)]
    payments: PaymentsArgs,
    #[command(flatten)]
    api: ApiSettings,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start_without_broker("api", &cli.common, admin_addrs::API).await?;
    let providers = ProviderCapabilities {
        payments: fleet_providers::payments::capabilities(),
        crm: fleet_providers::crm::declared_capabilities(&cli.crm).map_err(anyhow::Error::msg)?,
        payments_key_retention_s: cli.payments.payments_key_retention_s,
    };
    let listener = tokio::net::TcpListener::bind(cli.api.api_addr)
        .await
        .with_context(|| format!("binding the API address {}", cli.api.api_addr))?;
    let deps = ApiDeps {
        store: boot.store.clone(),
        providers,
        settings: cli.api,
        listener,
    };
    fleet_api::run(deps, boot.shutdown.clone()).await?;
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
