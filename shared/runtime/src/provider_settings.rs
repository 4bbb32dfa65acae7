//! Every provider's settings, read from its spec (`fleet_core::catalogue::ProviderSpec`):
//! one parser for all of them, so a provider's settings are named and defaulted the same
//! way as every other's. For a spec with the prefix `PAYMENTS_` they are:
//!
//! | setting | flag | when |
//! | --- | --- | --- |
//! | `PAYMENTS_URL` | `--payments-url` | always |
//! | `PAYMENTS_API_KEY` | `--payments-api-key` | always (never printed) |
//! | `PAYMENTS_TIMEOUT_MS` | `--payments-timeout-ms` | always, 1 ms to 10 min |
//! | `PAYMENTS_SEARCH_LAG_MS` | `--payments-search-lag-ms` | the provider is searched |
//! | `PAYMENTS_KEY_RETENTION_S` | `--payments-key-retention-s` | it deduplicates creates by key |
//! | `PAYMENTS_MAX_REQUEST_S` | `--payments-max-request-s` | always |
//! | `PAYMENTS_CAPABILITIES` | `--payments-capabilities` | an operator declares its guarantees |
//! | `PAYMENTS_PROVIDER` | `--payments-provider` | it may be Stripe (`reference` or `stripe`) |
//! | `PAYMENTS_STRIPE_SEARCH` | `--payments-stripe-search` | it may be Stripe (`on` or `off`) |
//! | `PAYMENTS_STRIPE_ACCOUNTS` | `--payments-stripe-accounts` | it may be Stripe (`tenant=acct_…,…`) |
//!
//! Defaults come from the spec, but for the URL and the key, which reach the simulator on
//! a developer machine (for Stripe: Stripe's API, and a key must be given). A value that
//! does not parse is refused at start, naming the setting.

use clap::builder::RangedU64ValueParser;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use fleet_core::catalogue::{Capabilities, Dialect, ProviderSpec, PROVIDERS};
use fleet_core::stripe::accounts::ConnectedAccounts;
use fleet_core::ProviderName;

use crate::redact::Secret;

mod rates;
pub use rates::ProviderRateArgs;

/// Where every provider listens by default: the simulator on a developer machine.
const DEVELOPER_URL: &str = "http://127.0.0.1:8090";

/// The key the simulator accepts.
const DEVELOPER_API_KEY: &str = "sk_test_sim";

/// Where a provider spoken as Stripe is reached unless its URL is set.
const STRIPE_URL: &str = "https://api.stripe.com";

/// What a Stripe API key starts with: a secret key or a restricted one.
const STRIPE_KEY_PREFIXES: [&str; 2] = ["sk_", "rk_"];

/// The bounds of a call's timeout: at least 1 ms, at most 10 minutes.
const TIMEOUT_MS: std::ops::RangeInclusive<u64> = 1..=600_000;

/// One provider's settings, as read.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    pub provider: ProviderName,
    /// Base URL of the provider's API.
    pub url: String,
    /// Sent as `Authorization: Bearer`.
    pub api_key: Secret<String>,
    /// Whole-call timeout (connect to last body byte).
    pub timeout_ms: u64,
    /// The documented bound on search lag (0 for a provider that is never searched).
    pub search_lag_ms: u64,
    /// The documented bound on how long after it started a request may still commit.
    pub max_request_s: u64,
    /// What the provider guarantees: the spec's, with the key retention that was set, or
    /// what the operator declared.
    pub capabilities: Capabilities,
    /// How its API is spoken (`<PREFIX>PROVIDER`): the reference protocol unless the spec
    /// allows Stripe and it was chosen.
    pub dialect: Dialect,
    /// Spoken as Stripe: the tenants whose requests act in a connected account of their
    /// own (`<PREFIX>STRIPE_ACCOUNTS`); empty otherwise.
    pub stripe_accounts: ConnectedAccounts,
}

/// Every provider's settings: what the binaries that call providers (execute), look them
/// up (reconcile) or judge intents against their guarantees (prepare, the API) flatten.
#[derive(Debug, Clone)]
pub struct ProviderArgs(Vec<ProviderSettings>);

impl ProviderArgs {
    /// The settings of `provider`.
    pub fn get(&self, provider: ProviderName) -> &ProviderSettings {
        self.0
            .iter()
            .find(|s| s.provider == provider)
            .expect("every provider's settings are read from its spec")
    }

    /// Every provider's settings, in the order of their specs (`PROVIDERS`).
    pub fn iter(&self) -> impl Iterator<Item = &ProviderSettings> {
        self.0.iter()
    }
}

/// One setting of a provider: the last words of its name, and its argument.
struct Setting<'a> {
    spec: &'a ProviderSpec,
    suffix: &'static str,
}

impl Setting<'_> {
    /// `PAYMENTS_URL`.
    fn env(&self) -> String {
        self.spec.env(self.suffix)
    }

    /// `payments_url`: the argument's id, as a derived field would have it.
    fn id(&self) -> String {
        self.env().to_lowercase()
    }

    /// The argument: `--payments-url`, read from `PAYMENTS_URL`, shown as such.
    fn arg(&self, help: String) -> Arg {
        Arg::new(self.id())
            .long(self.id().replace('_', "-"))
            .env(self.env())
            .value_name(self.env())
            .action(ArgAction::Set)
            .help(help)
    }

    fn u64(&self, m: &ArgMatches) -> Result<u64, clap::Error> {
        m.get_one::<u64>(&self.id())
            .copied()
            .ok_or_else(|| self.missing())
    }

    fn string(&self, m: &ArgMatches) -> Result<String, clap::Error> {
        m.get_one::<String>(&self.id())
            .cloned()
            .ok_or_else(|| self.missing())
    }

    /// Every setting has a default: a missing value is this parser's bug.
    fn missing(&self) -> clap::Error {
        clap::Error::raw(
            clap::error::ErrorKind::MissingRequiredArgument,
            format!("{} has no value\n", self.env()),
        )
    }
}

fn setting<'a>(spec: &'a ProviderSpec, suffix: &'static str) -> Setting<'a> {
    Setting { spec, suffix }
}

/// The arguments of one provider, as its spec has them.
fn arguments(spec: &ProviderSpec) -> Vec<Arg> {
    let title = spec.title;
    let contract = spec.contract;
    let mut args = vec![
        setting(spec, "URL")
            .arg(format!("Base URL of {title}"))
            .default_value(DEVELOPER_URL),
        setting(spec, "API_KEY")
            .arg("API key sent as `Authorization: Bearer` (never printed)".into())
            .hide_env_values(true)
            .hide_default_value(true)
            .default_value(DEVELOPER_API_KEY),
        setting(spec, "TIMEOUT_MS")
            .arg(format!(
                "Timeout of one call to {title}, connect to last body byte"
            ))
            .value_parser(RangedU64ValueParser::<u64>::new().range(TIMEOUT_MS))
            .default_value(contract.timeout_ms.to_string()),
    ];
    if let Some(search_lag_ms) = contract.search_lag_ms {
        args.push(
            setting(spec, "SEARCH_LAG_MS")
                .arg(
                    "The provider's documented bound on search lag: a search for an effect \
                     proves its absence only for attempts older than this"
                        .into(),
                )
                .value_parser(clap::value_parser!(u64))
                .default_value(search_lag_ms.to_string()),
        );
    }
    if spec.has_key_retention() {
        let retention_s = spec
            .capabilities
            .idempotent_create
            .map_or(0, |r| r.as_secs());
        args.push(
            setting(spec, "KEY_RETENTION_S")
                .arg(
                    "How long the provider keeps an idempotency key: a same-key retry is safe \
                     only within this window, and the approval window of its creates must be \
                     shorter"
                        .into(),
                )
                .value_parser(clap::value_parser!(u64))
                .default_value(retention_s.to_string()),
        );
    }
    args.push(
        setting(spec, "MAX_REQUEST_S")
            .arg(
                "The provider's documented upper bound on how long a request it accepted may \
                 still commit after it started (it keeps working after our client gave up). \
                 Nothing concludes \"no effect\" before this (and the search lag, where there \
                 is one) has passed since the latest attempt began"
                    .into(),
            )
            .value_parser(clap::value_parser!(u64))
            .default_value(contract.max_request_s.to_string()),
    );
    if spec.speaks_stripe() {
        args.push(
            setting(spec, "PROVIDER")
                .arg(format!(
                    "Which API {title} speaks: `reference` (docs/protocol.md) or `stripe` \
                     (docs/providers/stripe.md)"
                ))
                .value_parser(["reference", "stripe"])
                .default_value("reference"),
        );
        args.push(
            setting(spec, "STRIPE_SEARCH")
                .arg(
                    "Spoken as Stripe: `on` finds objects with Stripe's Search API where it \
                     covers them, `off` pages their list matched on metadata instead"
                        .into(),
                )
                .value_parser(["on", "off"])
                .default_value("on"),
        );
        args.push(
            setting(spec, "STRIPE_ACCOUNTS")
                .arg(
                    "Spoken as Stripe: the tenants with a connected account of their own, \
                     comma-separated `tenant=acct_…`; every request made for such a tenant \
                     carries `Stripe-Account`, and only that account's events move its \
                     operations. Empty: every tenant is served on the platform's account"
                        .into(),
                )
                .default_value(""),
        );
    }
    if spec.declared_capabilities {
        args.push(
            setting(spec, "CAPABILITIES")
                .arg(
                    "What this provider guarantees, comma-separated: `idempotent_create`, \
                     `lookup`, `conditional_update`. A provider without idempotent creates AND \
                     without lookup cannot be used for autonomous execution, and prepare \
                     refuses intents for it"
                        .into(),
                )
                .action(ArgAction::Append)
                .value_delimiter(',')
                .value_parser(capability_name)
                .default_value(spec.capabilities.declared_names().join(",")),
        );
    }
    args
}

/// One name of a declared list, trimmed; an empty one (`lookup,`) names nothing.
fn capability_name(raw: &str) -> Result<String, String> {
    let name = raw.trim();
    if !name.is_empty() {
        Capabilities::NONE.declaring(name)?;
    }
    Ok(name.to_owned())
}

/// One provider's settings from what clap matched.
fn read(spec: &ProviderSpec, m: &ArgMatches) -> Result<ProviderSettings, clap::Error> {
    let search_lag_ms = match spec.contract.search_lag_ms {
        Some(_) => setting(spec, "SEARCH_LAG_MS").u64(m)?,
        // Read by id, strongly consistent: no lag.
        None => 0,
    };
    let capabilities = if spec.declared_capabilities {
        let declared = setting(spec, "CAPABILITIES");
        m.get_many::<String>(&declared.id())
            .into_iter()
            .flatten()
            .filter(|name| !name.is_empty())
            .try_fold(Capabilities::NONE, |c, name| c.declaring(name))
            .map_err(|e| {
                clap::Error::raw(
                    clap::error::ErrorKind::ValueValidation,
                    format!("{}: {e}\n", declared.env()),
                )
            })?
    } else if spec.has_key_retention() {
        let retention_s = setting(spec, "KEY_RETENTION_S").u64(m)?;
        spec.capabilities_keeping_keys(std::time::Duration::from_secs(retention_s))
    } else {
        spec.capabilities
    };
    let dialect = dialect(spec, m)?;
    let url = setting(spec, "URL");
    let url = match dialect {
        Dialect::Stripe { .. } if defaulted(m, &url) => STRIPE_URL.to_owned(),
        _ => url.string(m)?,
    };
    let api_key = setting(spec, "API_KEY");
    if let Dialect::Stripe { .. } = dialect {
        check_stripe_key(spec, &api_key.string(m)?, defaulted(m, &api_key))?;
    }
    let stripe_accounts = stripe_accounts(spec, m, dialect)?;
    Ok(ProviderSettings {
        provider: spec.name,
        url,
        api_key: Secret::new(api_key.string(m)?),
        timeout_ms: setting(spec, "TIMEOUT_MS").u64(m)?,
        search_lag_ms,
        max_request_s: setting(spec, "MAX_REQUEST_S").u64(m)?,
        capabilities,
        dialect,
        stripe_accounts,
    })
}

/// The tenants' connected accounts, from `<PREFIX>STRIPE_ACCOUNTS`: refused at start when
/// malformed, or when set while the provider is not spoken as Stripe (it would be ignored,
/// and every tenant's requests would act on one account without anyone noticing).
fn stripe_accounts(
    spec: &ProviderSpec,
    m: &ArgMatches,
    dialect: Dialect,
) -> Result<ConnectedAccounts, clap::Error> {
    if !spec.speaks_stripe() {
        return Ok(ConnectedAccounts::default());
    }
    let setting = setting(spec, "STRIPE_ACCOUNTS");
    let refused = |problem: String| {
        clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!("{}: {problem}\n", setting.env()),
        )
    };
    let accounts =
        ConnectedAccounts::parse(&setting.string(m)?).map_err(|e| refused(e.to_string()))?;
    match dialect {
        Dialect::Reference if !accounts.is_empty() => Err(refused(format!(
            "set while {} is not stripe",
            spec.env("PROVIDER")
        ))),
        _ => Ok(accounts),
    }
}

/// Whether a setting was left at its default (neither flag nor environment gave it).
fn defaulted(m: &ArgMatches, setting: &Setting<'_>) -> bool {
    !matches!(
        m.value_source(&setting.id()),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    )
}

/// How the provider is spoken, from `<PREFIX>PROVIDER` and `<PREFIX>STRIPE_SEARCH`.
fn dialect(spec: &ProviderSpec, m: &ArgMatches) -> Result<Dialect, clap::Error> {
    if !spec.speaks_stripe() {
        return Ok(Dialect::Reference);
    }
    Ok(match setting(spec, "PROVIDER").string(m)?.as_str() {
        "stripe" => Dialect::Stripe {
            search: setting(spec, "STRIPE_SEARCH").string(m)? == "on",
        },
        _ => Dialect::Reference,
    })
}

/// A provider spoken as Stripe needs a Stripe key, given: the simulator's default would
/// only be refused by Stripe at the first call, after an approval was spent on it. The
/// message names the setting, never the value.
fn check_stripe_key(spec: &ProviderSpec, key: &str, defaulted: bool) -> Result<(), clap::Error> {
    let env = spec.env("API_KEY");
    let provider = spec.env("PROVIDER");
    let problem = if defaulted {
        format!("{env} must be set when {provider}=stripe")
    } else if !STRIPE_KEY_PREFIXES
        .iter()
        .any(|p| key.len() > p.len() && key.starts_with(p))
    {
        format!(
            "{env} is not a Stripe API key: with {provider}=stripe it must be a secret key \
             (sk_…) or a restricted key (rk_…)"
        )
    } else {
        return Ok(());
    };
    Err(clap::Error::raw(
        clap::error::ErrorKind::ValueValidation,
        format!("{problem}\n"),
    ))
}

impl FromArgMatches for ProviderArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        PROVIDERS
            .iter()
            .map(|spec| read(spec, m))
            .collect::<Result<_, _>>()
            .map(ProviderArgs)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for ProviderArgs {
    fn augment_args(cmd: Command) -> Command {
        PROVIDERS
            .iter()
            .fold(cmd, |cmd, spec| cmd.args(arguments(spec)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use fleet_core::catalogue::provider_spec::{CRM, ESIGN, ORDERS, PAYMENTS};
    use std::time::Duration;

    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        providers: ProviderArgs,
    }

    /// Env vars override defaults; only assert a provider's defaults when none of its
    /// settings is set here.
    fn unset(spec: &ProviderSpec) -> bool {
        std::env::vars().all(|(name, _)| !name.starts_with(spec.env_prefix))
    }

    #[test]
    fn every_provider_reads_its_defaults_from_its_spec() {
        let cli = Cli::try_parse_from(["bin"]).unwrap();
        for spec in PROVIDERS.iter().filter(|s| unset(s)) {
            let s = cli.providers.get(spec.name);
            assert_eq!(s.provider, spec.name);
            assert_eq!(s.url, DEVELOPER_URL);
            assert_eq!(s.api_key.expose(), DEVELOPER_API_KEY);
            assert_eq!(s.timeout_ms, spec.contract.timeout_ms);
            assert_eq!(s.search_lag_ms, spec.contract.search_lag_ms.unwrap_or(0));
            assert_eq!(s.max_request_s, spec.contract.max_request_s);
            assert_eq!(s.capabilities, spec.capabilities, "{}", spec.name);
            assert_eq!(s.dialect, Dialect::Reference);
        }
    }

    #[test]
    fn payments_spoken_as_stripe_needs_a_stripe_key_and_defaults_to_stripe() {
        let payments = fleet_core::catalogue::PROVIDERS[0];
        if !unset(payments) {
            return;
        }
        let cli = Cli::try_parse_from([
            "bin",
            "--payments-provider=stripe",
            "--payments-api-key=rk_test_abc",
            "--payments-stripe-search=off",
            "--payments-key-retention-s=0",
        ])
        .unwrap();
        let s = cli.providers.get(PAYMENTS.name);
        assert_eq!(s.dialect, Dialect::Stripe { search: false });
        assert_eq!(s.url, STRIPE_URL);
        assert_eq!(s.capabilities.idempotent_create, Some(Duration::ZERO));
        // The other providers are not affected.
        assert_eq!(cli.providers.get(CRM.name).url, DEVELOPER_URL);
        let at = Cli::try_parse_from([
            "bin",
            "--payments-provider=stripe",
            "--payments-api-key=sk_test_abc",
            "--payments-url=http://127.0.0.1:9",
        ])
        .unwrap();
        let s = at.providers.get(PAYMENTS.name);
        assert_eq!(s.url, "http://127.0.0.1:9");
        assert_eq!(s.dialect, Dialect::Stripe { search: true });

        let missing = Cli::try_parse_from(["bin", "--payments-provider=stripe"]).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("PAYMENTS_API_KEY must be set when PAYMENTS_PROVIDER=stripe"),
            "{missing}"
        );
        for bad in ["pk_test_abc", "sk_", "whsec_abc", "sk_test_sim"] {
            let args = ["bin", "--payments-provider=stripe", "--payments-api-key"];
            let flag = format!("{}={bad}", args[2]);
            let said = match Cli::try_parse_from([args[0], args[1], &flag]) {
                Ok(_) if bad == "sk_test_sim" => continue,
                Ok(_) => panic!("{bad} was accepted"),
                Err(e) => e.to_string(),
            };
            assert!(
                said.contains("PAYMENTS_API_KEY is not a Stripe API key"),
                "{said}"
            );
            // ("sk_" is in the message's own words.)
            assert!(
                bad == "sk_" || !said.contains(bad),
                "the key is not printed: {said}"
            );
        }
        assert!(Cli::try_parse_from(["bin", "--payments-provider=paypal"]).is_err());
        assert!(Cli::try_parse_from(["bin", "--payments-stripe-search=maybe"]).is_err());
    }

    #[test]
    fn a_tenants_connected_account_is_read_and_a_bad_one_stops_the_start() {
        let payments = fleet_core::catalogue::PROVIDERS[0];
        if !unset(payments) {
            return;
        }
        let stripe = [
            "bin",
            "--payments-provider=stripe",
            "--payments-api-key=sk_test_1",
        ];
        let with = |accounts: &str| {
            let flag = format!("--payments-stripe-accounts={accounts}");
            Cli::try_parse_from([stripe[0], stripe[1], stripe[2], &flag])
        };
        let cli = with("acme=acct_1Acme").unwrap();
        let accounts = &cli.providers.get(PAYMENTS.name).stripe_accounts;
        assert_eq!(accounts.of("acme"), Some("acct_1Acme"));
        assert_eq!(accounts.of("globex"), None);
        for bad in ["acme", "acme=acct_1,acme=acct_2", "acme=sk_test_1"] {
            let said = with(bad).unwrap_err().to_string();
            assert!(said.contains("PAYMENTS_STRIPE_ACCOUNTS:"), "{bad}: {said}");
        }
        let unused = Cli::try_parse_from(["bin", "--payments-stripe-accounts=acme=acct_1"]);
        let said = unused.unwrap_err().to_string();
        assert!(
            said.contains("set while PAYMENTS_PROVIDER is not stripe"),
            "{said}"
        );
    }

    /// The names (and defaults) deployments rely on.
    #[test]
    fn the_settings_keep_their_names_and_defaults() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        let shown: Vec<(String, Option<String>)> = cmd
            .get_arguments()
            .map(|a| {
                (
                    a.get_env().unwrap().to_string_lossy().into_owned(),
                    a.get_default_values()
                        .first()
                        .map(|d| d.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let expected = [
            ("PAYMENTS_URL", "http://127.0.0.1:8090"),
            ("PAYMENTS_API_KEY", "sk_test_sim"),
            ("PAYMENTS_TIMEOUT_MS", "10000"),
            ("PAYMENTS_SEARCH_LAG_MS", "60000"),
            ("PAYMENTS_KEY_RETENTION_S", "86400"),
            ("PAYMENTS_MAX_REQUEST_S", "120"),
            ("PAYMENTS_PROVIDER", "reference"),
            ("PAYMENTS_STRIPE_SEARCH", "on"),
            ("PAYMENTS_STRIPE_ACCOUNTS", ""),
            ("CRM_URL", "http://127.0.0.1:8090"),
            ("CRM_API_KEY", "sk_test_sim"),
            ("CRM_TIMEOUT_MS", "10000"),
            ("CRM_SEARCH_LAG_MS", "5000"),
            ("CRM_MAX_REQUEST_S", "120"),
            ("CRM_CAPABILITIES", "lookup,conditional_update"),
            ("ORDERS_URL", "http://127.0.0.1:8090"),
            ("ORDERS_API_KEY", "sk_test_sim"),
            ("ORDERS_TIMEOUT_MS", "10000"),
            ("ORDERS_MAX_REQUEST_S", "120"),
            ("ESIGN_URL", "http://127.0.0.1:8090"),
            ("ESIGN_API_KEY", "sk_test_sim"),
            ("ESIGN_TIMEOUT_MS", "10000"),
            ("ESIGN_SEARCH_LAG_MS", "60000"),
            ("ESIGN_KEY_RETENTION_S", "3600"),
            ("ESIGN_MAX_REQUEST_S", "120"),
        ]
        .map(|(env, default)| (env.to_owned(), Some(default.to_owned())));
        assert_eq!(shown, expected);
    }

    #[test]
    fn every_provider_reads_its_own_flags() {
        let cli = Cli::try_parse_from([
            "bin",
            "--payments-url=https://pay.example",
            "--payments-key-retention-s=600",
            "--crm-timeout-ms=2500",
            "--crm-capabilities=idempotent_create, lookup,",
            "--orders-max-request-s=30",
            "--esign-search-lag-ms=10",
            "--esign-api-key=sk_live_1",
        ])
        .unwrap();
        let p = &cli.providers;
        assert_eq!(p.get(PAYMENTS.name).url, "https://pay.example");
        assert_eq!(
            p.get(PAYMENTS.name).capabilities.idempotent_create,
            Some(Duration::from_secs(600))
        );
        assert_eq!(p.get(CRM.name).timeout_ms, 2500);
        let crm = p.get(CRM.name).capabilities;
        assert_eq!(crm.idempotent_create, Some(Duration::MAX));
        assert!(crm.lookup && !crm.conditional_update);
        assert_eq!(p.get(ORDERS.name).max_request_s, 30);
        assert_eq!(p.get(ORDERS.name).search_lag_ms, 0);
        assert_eq!(p.get(ESIGN.name).search_lag_ms, 10);
        assert_eq!(p.get(ESIGN.name).api_key.expose(), "sk_live_1");
        assert!(!format!("{cli:?}").contains("sk_live_1"));
    }

    #[test]
    fn a_bad_value_is_refused_naming_the_setting() {
        for spec in PROVIDERS {
            for (suffix, bad) in [
                ("TIMEOUT_MS", "0"),
                ("TIMEOUT_MS", "600001"),
                ("TIMEOUT_MS", "soon"),
                ("SEARCH_LAG_MS", "-1"),
                ("KEY_RETENTION_S", "a day"),
                ("MAX_REQUEST_S", "2m"),
                ("CAPABILITIES", "lookup,webhooks"),
            ] {
                let env = spec.env(suffix);
                let flag = format!("--{}={bad}", env.to_lowercase().replace('_', "-"));
                let Err(error) = Cli::try_parse_from(["bin", &flag]) else {
                    panic!("{flag} was accepted");
                };
                let said = error.to_string();
                // A setting the provider does not have is refused as unknown instead.
                let has = Cli::command_has(&env);
                assert!(!has || said.contains(&env), "{flag}: {said}");
            }
        }
    }

    impl Cli {
        fn command_has(env: &str) -> bool {
            use clap::CommandFactory;
            Cli::command()
                .get_arguments()
                .any(|a| a.get_env().is_some_and(|e| e == env))
        }
    }

    #[test]
    fn every_provider_setting_has_a_row_in_a_settings_table() {
        use clap::CommandFactory;
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let tables: String = std::fs::read_dir(docs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        let rates = ProviderRateArgs::augment_args(clap::Command::new("rates"));
        for arg in Cli::command().get_arguments().chain(rates.get_arguments()) {
            let env = arg.get_env().unwrap().to_string_lossy();
            let row = tables.lines().any(|line| {
                line.starts_with('|')
                    && line
                        .split('|')
                        .nth(1)
                        .is_some_and(|cell| cell.contains(&format!("`{env}`")))
            });
            assert!(row, "{env} has no row in a settings table under docs/");
        }
    }
}
