//! How fast each provider may be called (`<PREFIX>RATE_PER_S`, `PAYMENTS_RATE_PER_S` …),
//! read from every provider's spec like the rest of its settings: one argument per spec,
//! none written out by hand.

use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use fleet_core::catalogue::PROVIDERS;
use fleet_core::ProviderName;

use super::setting;

/// How fast each provider may be called, by every replica of execute and reconcile
/// together: the binaries that call providers flatten these. Unset: no limit, and no
/// request waits for a slot or costs a round trip to Postgres. Set it to the rate the
/// provider allows the account (the same value in every replica); the schedule is shared
/// in Postgres (docs/design.md#provider-rates).
#[derive(Debug, Clone, Default)]
pub struct ProviderRateArgs(Vec<(ProviderName, f64)>);

impl ProviderRateArgs {
    /// Each provider's configured rate, by provider name; unset ones are left out.
    pub fn rates(&self) -> Vec<(&'static str, f64)> {
        self.0
            .iter()
            .map(|(provider, rate)| (provider.as_str(), *rate))
            .collect()
    }

    /// The rate set for `provider`, if any.
    pub fn of(&self, provider: ProviderName) -> Option<f64> {
        self.0
            .iter()
            .find_map(|(p, rate)| (*p == provider).then_some(*rate))
    }
}

const SUFFIX: &str = "RATE_PER_S";

impl FromArgMatches for ProviderRateArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let set = PROVIDERS.iter().filter_map(|spec| {
            let rate = m.get_one::<f64>(&setting(spec, SUFFIX).id())?;
            Some((spec.name, *rate))
        });
        Ok(ProviderRateArgs(set.collect()))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for ProviderRateArgs {
    fn augment_args(cmd: Command) -> Command {
        cmd.args(PROVIDERS.iter().map(|spec| -> Arg {
            setting(spec, SUFFIX)
                .arg(format!(
                    "Requests per second to {} (its creates, updates and lookups), by every \
                     replica together; unset: no limit",
                    spec.title
                ))
                .value_parser(rate_per_s)
        }))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// A rate in requests per second: more than 0 (one request in 1000 s at the least), at
/// most a million.
fn rate_per_s(raw: &str) -> Result<f64, String> {
    crate::settings::bounded(0.001..=1_000_000.0, " requests per second")(raw)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};
    use fleet_core::catalogue::provider_spec::{CRM, PAYMENTS};

    use super::*;

    #[derive(Debug, Parser)]
    struct Rates {
        #[command(flatten)]
        rates: ProviderRateArgs,
    }

    #[test]
    fn provider_rates_are_unset_unless_given_and_must_be_positive() {
        let names: Vec<String> = PROVIDERS.iter().map(|spec| spec.env(SUFFIX)).collect();
        // Env vars override; only assert that nothing is set when none of them is here.
        if names.iter().all(|n| std::env::var_os(n).is_none()) {
            let none = Rates::try_parse_from(["bin"]).unwrap();
            assert!(none.rates.rates().is_empty());
        }
        let given =
            Rates::try_parse_from(["bin", "--payments-rate-per-s=40", "--crm-rate-per-s=0.5"])
                .unwrap();
        assert_eq!(given.rates.of(PAYMENTS.name), Some(40.0));
        assert_eq!(given.rates.of(CRM.name), Some(0.5));
        for refused in ["0", "-1", "fast", "2000000"] {
            let flag = format!("--payments-rate-per-s={refused}");
            let said = Rates::try_parse_from(["bin", &flag]).unwrap_err();
            assert!(said.to_string().contains("PAYMENTS_RATE_PER_S"), "{said}");
        }
    }

    /// The names deployments rely on, one per provider, none with a default.
    #[test]
    fn every_provider_has_its_rate_setting() {
        let shown: Vec<(String, usize)> = Rates::command()
            .get_arguments()
            .map(|a| {
                let env = a.get_env().unwrap().to_string_lossy().into_owned();
                (env, a.get_default_values().len())
            })
            .collect();
        let expected = [
            "PAYMENTS_RATE_PER_S",
            "CRM_RATE_PER_S",
            "ORDERS_RATE_PER_S",
            "ESIGN_RATE_PER_S",
        ]
        .map(|env| (env.to_owned(), 0));
        assert_eq!(shown, expected);
    }
}
