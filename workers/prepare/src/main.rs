//! fleet-prepare: consumes `intents.prepare`.

use clap::Parser;
use std::sync::Arc;

use fleet_prepare::{AnonymousIntents, IntakeRules, PayeeDirectory};
use fleet_providers::ProviderConfigs;
use fleet_runtime::{admin_addrs, CommonArgs, PolicyArgs, ProviderArgs};

#[derive(Parser)]
#[command(
    name = "fleet-prepare",
    version,
    about = "Validates intent.v1 messages and stores pending-approval operations"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// What the providers guarantee (`CRM_CAPABILITIES`, the key retentions: the
    /// capability guard's input), and where the payments provider's directory of payees is.
    #[command(flatten)]
    providers: ProviderArgs,
    #[command(flatten)]
    policies: PolicyArgs,
    /// `refuse`: an intent whose sender (the message's broker-validated `user_id`) no
    /// principal speaks as is dead-lettered `unknown_submitter`. `allow`: it is stored with
    /// no submitter, for development with a shared broker user only.
    #[arg(
        long,
        env = "PREPARE_ANONYMOUS_INTENTS",
        value_enum,
        default_value = "refuse"
    )]
    anonymous_intents: AnonymousIntents,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start::<fleet_store::component::Prepare>(
        "prepare",
        &cli.common,
        admin_addrs::PREPARE,
    )
    .await?;
    let policies = Arc::new(cli.policies.load()?);
    let configs = ProviderConfigs::from_args(&cli.providers).map_err(anyhow::Error::msg)?;
    let providers = configs.capabilities();
    let payees = PayeeDirectory::new(Arc::new(configs.connect()?));
    let deps = fleet_prepare::PrepareDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        rules: IntakeRules {
            providers,
            policies,
            payees,
        },
        anonymous: cli.anonymous_intents,
        concurrency: cli.common.concurrency,
    };
    fleet_prepare::run(deps, boot.shutdown.clone()).await?;
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
