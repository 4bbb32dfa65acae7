//! The provider clients and intake rules that workers build from their flags.

use std::sync::Arc;

use fleet_intake::{IntakeRules, PayeeDirectory};
use fleet_providers::{ProviderConfigs, Providers};
use fleet_runtime::{IntakeArgs, PolicyArgs, ProviderArgs, ProviderRateArgs};
use fleet_store::component::{PaceIntake, RateProviders};
use fleet_store::ProviderSchedule;

use crate::Boot;

impl<R: RateProviders> Boot<R> {
    /// A client for each provider, each request waiting for its slot in the schedule its
    /// rate sets, shared through Postgres with every replica (docs/design.md#provider-rates).
    pub fn paced_providers(
        &self,
        providers: &ProviderArgs,
        rates: &ProviderRateArgs,
    ) -> anyhow::Result<Arc<Providers>> {
        let configs = ProviderConfigs::from_args(providers);
        let pacers = ProviderSchedule::pacers(&self.store, &rates.rates());
        Ok(Arc::new(configs.connect_paced(pacers)?))
    }
}

impl<R: PaceIntake> Boot<R> {
    /// [`intake_rules`], with each payee lookup to a provider `intake.rates` names taking a slot
    /// of that provider's shared schedule, after the calls of approved operations
    /// (docs/design.md#provider-rates).
    pub fn paced_intake_rules(&self, intake: &IntakeArgs) -> anyhow::Result<IntakeRules> {
        let configs = ProviderConfigs::from_args(&intake.providers);
        let pacers = ProviderSchedule::intake_pacers(&self.store, &intake.rates.rates());
        Ok(IntakeRules {
            providers: configs.capabilities(),
            policies: Arc::new(intake.policies.load()?),
            payees: PayeeDirectory::new(Arc::new(configs.connect_paced(pacers)?)),
        })
    }
}

/// What an intent is checked against before it is stored: the providers' guarantees, the
/// quorum policies, and the payments provider's directory of payees (called unpaced).
pub fn intake_rules(
    providers: &ProviderArgs,
    policies: &PolicyArgs,
) -> anyhow::Result<IntakeRules> {
    let policies = Arc::new(policies.load()?);
    let configs = ProviderConfigs::from_args(providers);
    Ok(IntakeRules {
        providers: configs.capabilities(),
        policies,
        payees: PayeeDirectory::new(Arc::new(configs.connect()?)),
    })
}
