//! fleet-prepare: consumes `intents.prepare`.

use clap::Parser;
use fleet_prepare::AnonymousIntents;
use fleet_runtime::{CommonArgs, IntakeArgs};
use fleet_store::component;

#[derive(Parser)]
#[command(
    name = "fleet-prepare",
    version,
    about = "Validates intent.v1 messages and stores pending-approval operations"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    intake: IntakeArgs,
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
    /// Seconds an intent waits, parked on the queue and looked at again now and then, for
    /// a payee directory that gives no answer (429, 5xx, timeouts) before it is
    /// dead-lettered `payee_directory_unreachable`.
    #[arg(
        long,
        env = "PREPARE_PAYEE_LOOKUP_DEADLINE_S",
        default_value_t = 900,
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    payee_lookup_deadline_s: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let boot = fleet_boot::start::<component::Prepare>(&cli.common).await?;
    let deps = fleet_prepare::PrepareDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        rules: boot.paced_intake_rules(&cli.intake)?,
        anonymous: cli.anonymous_intents,
        lookup_deadline: std::time::Duration::from_secs(cli.payee_lookup_deadline_s),
        concurrency: cli.common.concurrency,
    };
    boot.serve(|shutdown| fleet_prepare::run(deps, shutdown))
        .await
}

#[cfg(test)]
fleet_runtime::test_every_argument_has_help_text!(Cli);
