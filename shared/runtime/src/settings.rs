//! Command-line/env settings that every binary flattens into its own clap parser:
//!
//! ```text
//! #[derive(clap::Parser)]
//! struct Cli {
//!     #[command(flatten)] common: CommonArgs,
//!     #[command(flatten)] providers: ProviderArgs,
//! }
//! let admin_addr = cli.common.admin_addr_or(admin_addrs::EXECUTE);
//! ```
//!
//! Every field has a flag and an env var; the defaults work against the services on a
//! developer machine. Secrets are [`crate::Secret`] / [`RedactedUrl`], so `{:?}` of the parsed
//! settings is safe to log, and `--help` never shows an env var's value
//! (`hide_env_values`).
//!
//! `ADMIN_ADDR` has a different default in each binary (several run on one host), so it
//! is an `Option` here and each binary supplies its default from [`admin_addrs`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;

use clap::Args;

use crate::redact::RedactedUrl;
use crate::telemetry::LogFormat;

/// Default admin (metrics/health) listen addresses, one per binary.
pub mod admin_addrs {
    use super::*;

    const fn local(port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    }

    pub const PREPARE: SocketAddr = local(9101);
    pub const EXECUTE: SocketAddr = local(9102);
    pub const RECONCILE: SocketAddr = local(9103);
    pub const WEBHOOK_INGEST: SocketAddr = local(9104);
    pub const API: SocketAddr = local(9105);
    pub const RELAY: SocketAddr = local(9106);
}

/// What a binary does with the broker topology when it connects (`AMQP_TOPOLOGY`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AmqpTopology {
    #[default]
    Declare,
    Verify,
}

/// Settings every worker shares: where Postgres and RabbitMQ are, logging, and the bounds
/// on concurrent work.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Postgres URL (the password is never printed).
    #[arg(
        long,
        env = "DATABASE_URL",
        hide_env_values = true,
        default_value = "postgres://postgres@127.0.0.1:5432/fleet"
    )]
    pub database_url: RedactedUrl,

    /// RabbitMQ URL (the password is never printed).
    #[arg(
        long,
        env = "AMQP_URL",
        hide_env_values = true,
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f"
    )]
    pub amqp_url: RedactedUrl,

    /// Prefix for every exchange and queue name, so that tests (or tenants) sharing one
    /// broker do not see each other's messages. Empty in production.
    #[arg(long, env = "AMQP_NAMESPACE", default_value = "")]
    pub amqp_namespace: String,

    /// `declare`: declare the broker's queues and exchanges at start (needs the broker's
    /// configure permission); `verify`: only check that they exist, for a
    /// least-privilege broker user (`fleetctl broker setup` declared them).
    #[arg(long, env = "AMQP_TOPOLOGY", value_enum, default_value_t = AmqpTopology::Declare)]
    pub amqp_topology: AmqpTopology,

    /// Admin listen address for /metrics, /livez, /readyz [default: per binary, see
    /// `admin_addrs`: prepare 9101, execute 9102, reconcile 9103, webhook-ingest 9104,
    /// api 9105, relay 9106].
    #[arg(long, env = "ADMIN_ADDR")]
    pub admin_addr: Option<SocketAddr>,

    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Maximum Postgres connections in this process's pool.
    #[arg(long, env = "DB_POOL_SIZE", default_value_t = 16, value_parser = bounded(1..=1024usize, ""))]
    pub db_pool_size: usize,

    /// Maximum unacknowledged broker messages per consumer (AMQP basic.qos).
    #[arg(long, env = "PREFETCH", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..))]
    pub prefetch: u16,

    /// Maximum messages handled at the same time by this process.
    #[arg(long, env = "CONCURRENCY", default_value_t = 8, value_parser = bounded(1..=4096usize, ""))]
    pub concurrency: usize,
}

impl CommonArgs {
    /// The admin address from `--admin-addr`/`ADMIN_ADDR`, else this binary's default.
    pub fn admin_addr_or(&self, default: SocketAddr) -> SocketAddr {
        self.admin_addr.unwrap_or(default)
    }
}

/// Every argument (`command sub --arg`) and subcommand of `cmd` that `--help` would show
/// without a description; each binary's tests require none.
pub fn undocumented_arguments(cmd: &clap::Command) -> Vec<String> {
    let mut out = Vec::new();
    collect_undocumented(cmd, cmd.get_name(), &mut out);
    out
}

/// Asserts that `--help` describes every argument and subcommand of `C`.
pub fn assert_every_argument_documented<C: clap::CommandFactory>() {
    assert_eq!(undocumented_arguments(&C::command()), Vec::<String>::new());
}

/// The unit test each binary carries for its parser `$cli`: `--help` describes every
/// argument and subcommand.
#[macro_export]
macro_rules! test_every_argument_has_help_text {
    ($cli:ty) => {
        #[test]
        fn every_argument_has_help_text() {
            $crate::settings::assert_every_argument_documented::<$cli>();
        }
    };
}

fn collect_undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let builtin = matches!(arg.get_id().as_str(), "help" | "version");
        if !builtin
            && !arg.is_hide_set()
            && arg.get_help().is_none()
            && arg.get_long_help().is_none()
        {
            out.push(format!("{path} {}", arg.get_id()));
        }
    }
    for sub in cmd.get_subcommands() {
        let sub_path = format!("{path} {}", sub.get_name());
        if sub.get_about().is_none() && sub.get_long_about().is_none() {
            out.push(sub_path.clone());
        }
        collect_undocumented(sub, &sub_path, out);
    }
}

/// A number within `range`, `unit` said after it in the refusal ("requests per second").
pub(crate) fn bounded<T>(
    range: RangeInclusive<T>,
    unit: &'static str,
) -> impl Fn(&str) -> Result<T, String> + Clone
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Clone,
    T::Err: std::fmt::Display,
{
    move |raw: &str| {
        let value: T = raw
            .parse()
            .map_err(|e| format!("{raw:?} is not a number: {e}"))?;
        if range.contains(&value) {
            Ok(value)
        } else {
            let (start, end) = (range.start(), range.end());
            Err(format!("{value} is outside {start}..={end}{unit}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider_settings::ProviderArgs;
    use clap::Parser;
    use fleet_core::catalogue::provider_spec::PAYMENTS;
    use std::time::Duration;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        providers: ProviderArgs,
    }

    /// Env vars override defaults; only assert a default when its env var is unset here.
    fn unset(var: &str) -> bool {
        std::env::var_os(var).is_none()
    }

    #[test]
    fn defaults_work_on_a_developer_machine() {
        let cli = Cli::try_parse_from(["bin"]).unwrap();
        if unset("DATABASE_URL") {
            assert_eq!(
                cli.common.database_url.expose(),
                "postgres://postgres@127.0.0.1:5432/fleet"
            );
        }
        if unset("AMQP_URL") {
            assert_eq!(
                cli.common.amqp_url.expose(),
                "amqp://guest:guest@127.0.0.1:5672/%2f"
            );
        }
        if unset("ADMIN_ADDR") {
            assert_eq!(
                cli.common.admin_addr_or(admin_addrs::EXECUTE).to_string(),
                "127.0.0.1:9102"
            );
        }
        if unset("DB_POOL_SIZE") {
            assert_eq!(cli.common.db_pool_size, 16);
        }
        if unset("PREFETCH") {
            assert_eq!(cli.common.prefetch, 32);
        }
        let payments = cli.providers.get(PAYMENTS.name);
        if unset("PAYMENTS_API_KEY") {
            assert_eq!(payments.api_key.expose(), "sk_test_sim");
        }
        if unset("PAYMENTS_TIMEOUT_MS") {
            assert_eq!(payments.timeout_ms, 10_000);
        }
        if unset("PAYMENTS_KEY_RETENTION_S") {
            assert_eq!(
                payments.capabilities.idempotent_create,
                Some(Duration::from_secs(86_400))
            );
        }
    }

    #[test]
    fn flags_parse_and_secrets_stay_hidden_in_debug_output() {
        let cli = Cli::try_parse_from([
            "bin",
            "--database-url=postgres://app:pg-pass-123@db:5432/fleet",
            "--amqp-url=amqp://app:mq-pass-456@mq:5672/%2f",
            "--payments-api-key=sk_live_789",
            "--admin-addr=0.0.0.0:9200",
            "--log-format=json",
            "--prefetch=5",
        ])
        .unwrap();
        assert_eq!(
            cli.providers.get(PAYMENTS.name).api_key.expose(),
            "sk_live_789"
        );
        assert_eq!(
            cli.common.admin_addr_or(admin_addrs::PREPARE).to_string(),
            "0.0.0.0:9200"
        );
        assert_eq!(cli.common.log_format, LogFormat::Json);
        assert_eq!(cli.common.prefetch, 5);
        let shown = format!("{cli:?}");
        for secret in ["pg-pass-123", "mq-pass-456", "sk_live_789"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        assert!(
            shown.contains("postgres://app:[redacted]@db:5432/fleet"),
            "{shown}"
        );
    }

    #[test]
    fn bounds_are_enforced() {
        assert!(Cli::try_parse_from(["bin", "--db-pool-size=0"]).is_err());
        assert!(Cli::try_parse_from(["bin", "--concurrency=5000"]).is_err());
        assert!(Cli::try_parse_from(["bin", "--prefetch=0"]).is_err());
        assert!(Cli::try_parse_from(["bin", "--payments-timeout-ms=0"]).is_err());
    }

    #[test]
    fn shared_settings_all_have_help_and_a_missing_one_is_named() {
        use clap::CommandFactory;
        assert_eq!(
            undocumented_arguments(&Cli::command()),
            Vec::<String>::new()
        );
        let bare = clap::Command::new("bin")
            .arg(
                clap::Arg::new("documented")
                    .long("documented")
                    .help("Has help."),
            )
            .arg(clap::Arg::new("bare").long("bare"))
            .subcommand(clap::Command::new("sub").arg(clap::Arg::new("inner").long("inner")));
        assert_eq!(
            undocumented_arguments(&bare),
            ["bin bare", "bin sub", "bin sub inner"]
        );
    }

    #[test]
    fn help_never_shows_the_api_key_default() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        assert!(!help.contains("sk_test_sim"), "{help}");
        assert!(help.contains("PAYMENTS_API_KEY"));
    }
}
