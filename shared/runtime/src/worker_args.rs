//! The groups of flags several workers read together, flattened into each one's `Cli`.

use clap::Args;

use crate::{CommonArgs, PolicyArgs, ProviderArgs, ProviderRateArgs};

/// The flags of a worker that takes operations off a queue and calls their provider
/// (execute, reconcile), but for its own settings: the shared ones, and the providers
/// with their rates.
#[derive(Args)]
pub struct ProviderWorkerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub providers: ProviderArgs,
    #[command(flatten)]
    pub rates: ProviderRateArgs,
}

/// What an intent is checked against where it comes in (api, prepare): what the providers
/// guarantee (the capability guard's input) and where the payments provider's directory
/// of payees is, the quorum policies, and each provider's rate, which the payee lookups
/// keep to together with execute's and reconcile's calls (after them) in the schedule
/// shared in Postgres.
#[derive(Args)]
pub struct IntakeArgs {
    #[command(flatten)]
    pub providers: ProviderArgs,
    #[command(flatten)]
    pub policies: PolicyArgs,
    #[command(flatten)]
    pub rates: ProviderRateArgs,
}
