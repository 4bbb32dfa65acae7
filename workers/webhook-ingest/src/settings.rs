//! webhook-ingest's own settings (flags with env), on top of the common ones.

use std::net::SocketAddr;
use std::sync::LazyLock;
use std::time::Duration;

use clap::{Args, ValueEnum};
use fleet_core::stripe::accounts::{AccountsError, ConnectedAccounts};
use fleet_runtime::{BodyPace, ConnectionLimits, OptionalSecret, Secret};
use fleet_store::MIN_WEBHOOK_RETENTION_S;

use crate::limits::{RequestLimits, MAX_HEAD_BYTES};
use crate::secrets::{SecretsError, WebhookSecrets};
use crate::signature::Freshness;
use crate::stripe_signature::{StripeSecret, StripeSecretError};

/// Which halves this process runs; they scale separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// The HTTP receiver only: verify, publish with confirm, answer.
    Receiver,
    /// The queue consumer (and the retention job) only.
    Consumer,
    Both,
}

impl Mode {
    pub fn receives(self) -> bool {
        match self {
            Mode::Receiver | Mode::Both => true,
            Mode::Consumer => false,
        }
    }

    pub fn consumes(self) -> bool {
        match self {
            Mode::Consumer | Mode::Both => true,
            Mode::Receiver => false,
        }
    }
}

/// How the payments provider is spoken, as the other workers read `PAYMENTS_PROVIDER`:
/// spoken as Stripe, its events arrive at `POST /webhooks/stripe` in Stripe's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PaymentsDialect {
    Reference,
    Stripe,
}

/// Providers whose webhooks are accepted, as they appear in `/webhooks/{provider}` and in
/// `operations.provider`: those whose events settle some action of the catalogue.
pub static KNOWN_PROVIDERS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    fleet_core::catalogue::webhook_providers()
        .into_iter()
        .map(fleet_core::ProviderName::as_str)
        .collect()
});

#[derive(Debug, Clone, Args)]
pub struct WebhookSettings {
    /// What this process runs.
    #[arg(long = "webhook-mode", env = "WEBHOOK_MODE", value_enum, default_value_t = Mode::Both)]
    pub mode: Mode,

    /// Where the receiver listens for `POST /webhooks/{provider}` (apart from ADMIN_ADDR).
    #[arg(long, env = "WEBHOOK_ADDR", default_value = "127.0.0.1:8091")]
    pub webhook_addr: SocketAddr,

    /// Signing secrets, comma-separated `whsec_<base64>`, newest first (never printed).
    /// Required by the receiver and by the consumer, which verifies every event again.
    #[arg(long, env = "WEBHOOK_SECRETS", optional_secret = true)]
    pub webhook_secrets: Secret<String>,

    /// How the payments provider is spoken (`reference` or `stripe`); `stripe` serves
    /// `POST /webhooks/stripe`, verified with PAYMENTS_WEBHOOK_SECRET.
    #[arg(long, env = "PAYMENTS_PROVIDER", value_enum, default_value_t = PaymentsDialect::Reference)]
    pub payments_provider: PaymentsDialect,

    /// The Stripe endpoint's signing secret (`whsec_…`, never printed), or the secrets of
    /// the endpoints delivering here separated by commas (the platform's endpoint and the
    /// Connect endpoint sign with their own); required when PAYMENTS_PROVIDER=stripe,
    /// refused otherwise.
    #[arg(long, env = "PAYMENTS_WEBHOOK_SECRET", optional_secret = true)]
    pub payments_webhook_secret: Secret<String>,

    /// The tenants with a Stripe connected account of their own, `tenant=acct_…,…` (the
    /// value the other workers read): an event from a connected account moves only that
    /// tenant's operations, the platform's own events only the other tenants'.
    #[arg(long, env = "PAYMENTS_STRIPE_ACCOUNTS", default_value = "")]
    pub payments_stripe_accounts: String,

    /// Largest webhook body accepted; larger ones get 413.
    #[arg(long, env = "WEBHOOK_MAX_BODY_BYTES", default_value_t = 256 * 1024,
          value_parser = clap::value_parser!(u32).range(1_024..=1_048_576))]
    pub webhook_max_body_bytes: u32,

    /// Most connections the receiver keeps open; more wait in the accept backlog.
    #[arg(long, env = "WEBHOOK_MAX_CONNECTIONS", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=16_384))]
    pub webhook_max_connections: u32,

    /// Most verified deliveries published at once; one that finds no slot within
    /// WEBHOOK_BODY_TIMEOUT_MS gets 503. Bodies are read before, without a slot.
    #[arg(long, env = "WEBHOOK_MAX_CONCURRENT_REQUESTS", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=1_024))]
    pub webhook_max_concurrent_requests: u32,

    /// How long a request head (line and headers) may take to arrive, also between two
    /// requests on a kept-alive connection; the connection is closed after it.
    #[arg(long, env = "WEBHOOK_HEADER_TIMEOUT_MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub webhook_header_timeout_ms: u64,

    /// How long a request body may take to arrive, from the end of its head (later is
    /// 408 and the connection is closed); then also how long a verified delivery may wait
    /// for a slot.
    #[arg(long, env = "WEBHOOK_BODY_TIMEOUT_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(100..=120_000))]
    pub webhook_body_timeout_ms: u64,

    /// After WEBHOOK_BODY_GRACE_MS, the least bytes per second a body must arrive at
    /// (averaged from the end of the grace); slower is 408 and the connection is closed.
    #[arg(long, env = "WEBHOOK_BODY_MIN_BYTES_PER_S", default_value_t = 1_024,
          value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    pub webhook_body_min_bytes_per_s: u32,

    /// How long a body's first bytes may take before its rate is checked.
    #[arg(long, env = "WEBHOOK_BODY_GRACE_MS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub webhook_body_grace_ms: u64,

    /// How long event ids are kept for deduplication, in seconds (30 days by default).
    /// Providers redeliver for days: at least 7 days (604800), at most 10 years.
    #[arg(long, env = "WEBHOOK_RETENTION_S", default_value_t = 2_592_000,
          value_parser = clap::value_parser!(u64).range(MIN_WEBHOOK_RETENTION_S..=315_360_000))]
    pub webhook_retention_s: u64,

    /// How often the retention job runs.
    #[arg(long, env = "WEBHOOK_RETENTION_INTERVAL_S", default_value_t = 3_600,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub webhook_retention_interval_s: u64,

    /// Rows deleted per retention statement (several statements per run, each short).
    #[arg(long, env = "WEBHOOK_RETENTION_BATCH", default_value_t = 1_000,
          value_parser = clap::value_parser!(i64).range(1..=100_000))]
    pub webhook_retention_batch: i64,
}

impl WebhookSettings {
    pub fn secrets(&self) -> Result<WebhookSecrets, SecretsError> {
        WebhookSecrets::parse(self.webhook_secrets.expose())
    }

    /// The Stripe endpoint's secret when payments are spoken as Stripe; `None` when not.
    pub fn stripe_secret(&self) -> Result<Option<StripeSecret>, StripeSecretError> {
        let secret = self.payments_webhook_secret.expose();
        match (self.payments_provider, secret.is_empty()) {
            (PaymentsDialect::Stripe, true) => Err(StripeSecretError::Missing),
            (PaymentsDialect::Stripe, false) => StripeSecret::parse(secret).map(Some),
            (PaymentsDialect::Reference, true) => Ok(None),
            (PaymentsDialect::Reference, false) => Err(StripeSecretError::Unused),
        }
    }

    /// The tenants' connected accounts; refused when malformed.
    pub fn stripe_accounts(&self) -> Result<ConnectedAccounts, AccountsError> {
        ConnectedAccounts::parse(&self.payments_stripe_accounts)
    }

    pub fn retention_interval(&self) -> Duration {
        Duration::from_secs(self.webhook_retention_interval_s)
    }

    /// How old a signature may be when the consumer verifies it: as old as the dedup
    /// retention allows (see [`Freshness::within_dedup_retention`]).
    pub fn consumer_freshness(&self) -> Freshness {
        Freshness::within_dedup_retention(self.webhook_retention_s)
    }

    pub fn request_limits(&self) -> RequestLimits {
        RequestLimits {
            max_body_bytes: self.webhook_max_body_bytes as usize,
            max_concurrent: self.webhook_max_concurrent_requests as usize,
            body: BodyPace {
                total: Duration::from_millis(self.webhook_body_timeout_ms),
                min_bytes_per_s: self.webhook_body_min_bytes_per_s,
                grace: Duration::from_millis(self.webhook_body_grace_ms),
            },
        }
    }

    pub fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: self.webhook_max_connections as usize,
            header_timeout: Duration::from_millis(self.webhook_header_timeout_ms),
            max_head_bytes: MAX_HEAD_BYTES,
        }
    }
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            mode: Mode::Both,
            webhook_addr: SocketAddr::from(([127, 0, 0, 1], 8091)),
            webhook_secrets: Secret::new(String::new()),
            payments_provider: PaymentsDialect::Reference,
            payments_webhook_secret: Secret::new(String::new()),
            payments_stripe_accounts: String::new(),
            webhook_max_body_bytes: 256 * 1024,
            webhook_max_connections: 256,
            webhook_max_concurrent_requests: 16,
            webhook_header_timeout_ms: 5_000,
            webhook_body_timeout_ms: 10_000,
            webhook_body_min_bytes_per_s: 1_024,
            webhook_body_grace_ms: 2_000,
            webhook_retention_s: 2_592_000,
            webhook_retention_interval_s: 3_600,
            webhook_retention_batch: 1_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        webhook: WebhookSettings,
    }

    #[test]
    fn retention_below_seven_days_is_refused() {
        assert!(Cli::try_parse_from(["bin", "--webhook-retention-s=604799"]).is_err());
        assert_eq!(
            Cli::try_parse_from(["bin", "--webhook-retention-s=604800"])
                .unwrap()
                .webhook
                .webhook_retention_s,
            604_800
        );
    }

    #[test]
    fn secrets_never_show_in_debug_or_help() {
        use clap::CommandFactory;
        let cli = Cli::try_parse_from([
            "bin",
            "--webhook-secrets=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ])
        .unwrap();
        assert!(!format!("{cli:?}").contains("MfKQ"));
        assert_eq!(cli.webhook.secrets().unwrap().len(), 1);
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("WEBHOOK_SECRETS"));
    }

    #[test]
    fn the_receiver_bounds_have_defaults_and_refuse_zero() {
        let cli = Cli::try_parse_from(["bin"]).unwrap();
        assert_eq!(
            cli.webhook.connection_limits(),
            ConnectionLimits {
                max_connections: 256,
                header_timeout: Duration::from_secs(5),
                max_head_bytes: MAX_HEAD_BYTES,
            }
        );
        let requests = RequestLimits {
            max_body_bytes: 256 * 1024,
            max_concurrent: 16,
            body: BodyPace {
                total: Duration::from_secs(10),
                min_bytes_per_s: 1_024,
                grace: Duration::from_secs(2),
            },
        };
        assert_eq!(cli.webhook.request_limits(), requests);
        assert_eq!(WebhookSettings::default().request_limits(), requests);
        assert_eq!(
            WebhookSettings::default().connection_limits(),
            cli.webhook.connection_limits()
        );
        for zero in [
            "--webhook-max-connections=0",
            "--webhook-max-concurrent-requests=0",
            "--webhook-header-timeout-ms=0",
            "--webhook-body-timeout-ms=0",
            "--webhook-body-min-bytes-per-s=0",
        ] {
            assert!(Cli::try_parse_from(["bin", zero]).is_err(), "{zero}");
        }
    }

    #[test]
    fn the_stripe_secret_is_required_with_stripe_and_only_then() {
        let parse = |args: &[&str]| {
            let mut all = vec!["bin"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).unwrap().webhook.stripe_secret()
        };
        assert!(parse(&[]).unwrap().is_none());
        assert_eq!(
            parse(&["--payments-provider=stripe"]).unwrap_err(),
            StripeSecretError::Missing
        );
        assert_eq!(
            parse(&[
                "--payments-provider=stripe",
                "--payments-webhook-secret=sk_test_1"
            ])
            .unwrap_err(),
            StripeSecretError::Malformed
        );
        assert!(parse(&[
            "--payments-provider=stripe",
            "--payments-webhook-secret=whsec_abc123"
        ])
        .unwrap()
        .is_some());
        assert_eq!(
            parse(&["--payments-webhook-secret=whsec_abc123"]).unwrap_err(),
            StripeSecretError::Unused
        );
    }

    #[test]
    fn modes_say_what_runs() {
        let cli = Cli::try_parse_from(["bin", "--webhook-mode=receiver"]).unwrap();
        assert!(cli.webhook.mode.receives() && !cli.webhook.mode.consumes());
        assert!(Mode::Both.receives() && Mode::Both.consumes());
    }
}
