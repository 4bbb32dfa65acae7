//! fleet-api's own settings (flags with env), on top of the common ones.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use fleet_core::rate::RateRule;
use fleet_core::wait_shares::ShareCaps;
use fleet_runtime::{BodyPace, ConnectionLimits};

use crate::public_url::PublicUrl;

/// The largest request head read (line and headers; 431 beyond it).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Args)]
pub struct ApiSettings {
    /// Where the HTTP API listens (apart from ADMIN_ADDR).
    #[arg(long, env = "API_ADDR", default_value = "127.0.0.1:8080")]
    pub api_addr: SocketAddr,

    /// Most connections kept open; more wait in the accept backlog. Keep it well below
    /// the process's open-file limit (`ulimit -n`): the database pool and the broker need
    /// descriptors too.
    #[arg(long, env = "API_MAX_CONNECTIONS", default_value_t = 512,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub api_max_connections: u32,

    /// How long a request head (line and headers) may take to arrive, on a new
    /// connection and between two requests of a kept-alive one (the idle timeout); the
    /// connection is closed after it.
    #[arg(long, env = "API_HEADER_TIMEOUT_MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(100..=120_000))]
    pub api_header_timeout_ms: u64,

    /// Most requests worked on at once (a request waiting on an operation does not count
    /// while it waits).
    #[arg(long, env = "API_MAX_CONCURRENT_REQUESTS", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=4_096))]
    pub api_max_concurrent_requests: u32,

    /// Of API_MAX_CONCURRENT_REQUESTS, how many one principal's requests may hold (and
    /// the requests without a valid credential from one source address); more wait for
    /// one of their own, so one client cannot take every slot.
    #[arg(long, env = "API_MAX_CONCURRENT_REQUESTS_PER_PRINCIPAL", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=4_096))]
    pub api_max_concurrent_requests_per_principal: u32,

    /// How long a request may wait for a slot among API_MAX_CONCURRENT_REQUESTS before
    /// it is answered 503 `busy`.
    #[arg(long, env = "API_REQUEST_QUEUE_MS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub api_request_queue_ms: u64,

    /// Requests per second each principal may make (its bucket's refill); more get 429
    /// `rate_limited` with `Retry-After`.
    #[arg(long, env = "API_RATE_PER_S", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub api_rate_per_s: u32,

    /// Requests a principal may make at once above its rate (its bucket's size).
    #[arg(long, env = "API_RATE_BURST", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub api_rate_burst: u32,

    /// Requests per second one source address may send without a credential (no bearer
    /// token, no console session), and separately with credentials that are refused;
    /// more get 429 `rate_limited` before anything is looked up.
    #[arg(long, env = "API_ANONYMOUS_RATE_PER_S", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub api_anonymous_rate_per_s: u32,

    /// Requests one source address may send at once above API_ANONYMOUS_RATE_PER_S.
    #[arg(long, env = "API_ANONYMOUS_RATE_BURST", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub api_anonymous_rate_burst: u32,

    /// How long a request body may take to arrive, from the moment it is read; later is
    /// 408 `body_timeout` and the connection is closed.
    #[arg(long, env = "API_BODY_TIMEOUT_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(100..=120_000))]
    pub api_body_timeout_ms: u64,

    /// After API_BODY_GRACE_MS, the least bytes per second a body must arrive at
    /// (averaged from the end of the grace); slower is 408 `body_timeout`.
    #[arg(long, env = "API_BODY_MIN_BYTES_PER_S", default_value_t = 1_024,
          value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    pub api_body_min_bytes_per_s: u32,

    /// How long a body's first bytes may take before its rate is checked.
    #[arg(long, env = "API_BODY_GRACE_MS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub api_body_grace_ms: u64,

    /// Requests that may wait on an operation (`wait_for`) at the same time; more get 429.
    #[arg(long, env = "API_MAX_WAITERS", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub api_max_waiters: u32,

    /// Of API_MAX_WAITERS, how many the operations of one tenant may hold; more get 429.
    #[arg(long, env = "API_MAX_WAITERS_PER_TENANT", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub api_max_waiters_per_tenant: u32,

    /// Of API_MAX_WAITERS_PER_TENANT, how many one principal may hold; more get 429.
    #[arg(long, env = "API_MAX_WAITERS_PER_PRINCIPAL", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub api_max_waiters_per_principal: u32,

    /// How often the rows of waited-on operations are read (one statement for all of
    /// them), so how late a waiter may hear of a change.
    #[arg(long, env = "API_WAIT_POLL_MS", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(20..=10_000))]
    pub api_wait_poll_ms: u64,

    /// The API's address as people and agents reach it (behind a proxy, not API_ADDR):
    /// links handed out are built on it, e.g. an operation's approval page
    /// `<API_PUBLIC_URL>/console/operations/<id>`. Default: http:// + the listening address.
    #[arg(long, env = "API_PUBLIC_URL", value_parser = PublicUrl::parse)]
    pub api_public_url: Option<PublicUrl>,
}

impl ApiSettings {
    pub fn wait_poll(&self) -> Duration {
        Duration::from_millis(self.api_wait_poll_ms)
    }

    /// The wait slots' caps (a share above the whole is cut to it).
    pub fn waiter_caps(&self) -> Result<ShareCaps, String> {
        ShareCaps::new(
            self.api_max_waiters as usize,
            self.api_max_waiters_per_tenant as usize,
            self.api_max_waiters_per_principal as usize,
        )
        .map_err(|e| format!("API_MAX_WAITERS, _PER_TENANT, _PER_PRINCIPAL: {e}"))
    }

    pub fn rate_rule(&self) -> RateRule {
        RateRule::new(self.api_rate_per_s, self.api_rate_burst)
            .expect("clap refuses a rate or burst of zero")
    }

    pub fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: self.api_max_connections as usize,
            header_timeout: Duration::from_millis(self.api_header_timeout_ms),
            max_head_bytes: MAX_HEAD_BYTES,
        }
    }

    pub fn anonymous_rate_rule(&self) -> RateRule {
        RateRule::new(self.api_anonymous_rate_per_s, self.api_anonymous_rate_burst)
            .expect("clap refuses a rate or burst of zero")
    }

    /// The deadlines of every request body.
    pub fn body_pace(&self) -> BodyPace {
        BodyPace {
            total: Duration::from_millis(self.api_body_timeout_ms),
            min_bytes_per_s: self.api_body_min_bytes_per_s,
            grace: Duration::from_millis(self.api_body_grace_ms),
        }
    }

    /// One principal's share of the request slots (a share above the whole is cut to it).
    pub fn request_share(&self) -> usize {
        self.api_max_concurrent_requests_per_principal
            .min(self.api_max_concurrent_requests) as usize
    }

    pub fn request_queue_timeout(&self) -> Duration {
        Duration::from_millis(self.api_request_queue_ms)
    }

    /// `API_PUBLIC_URL`, or the address the API actually listens on (`listening`).
    /// Where links handed out lead: `API_PUBLIC_URL`, else the address listened on. An
    /// address that names every interface (`0.0.0.0`, `::`) is no address anyone can
    /// reach: links built on it would lead nowhere, so the start is refused instead.
    pub fn public_url(&self, listening: SocketAddr) -> Result<PublicUrl, String> {
        match &self.api_public_url {
            Some(url) => Ok(url.clone()),
            None if listening.ip().is_unspecified() => Err(format!(
                "API_ADDR {listening} listens on every interface, which is no address a person \
                 or an agent can open: set API_PUBLIC_URL to the URL they reach the API at \
                 (e.g. https://fleet.example.com), on which approval links are built"
            )),
            None => Ok(PublicUrl::listening_on(listening)),
        }
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            api_addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            api_max_connections: 512,
            api_header_timeout_ms: 5_000,
            api_max_concurrent_requests: 64,
            api_max_concurrent_requests_per_principal: 16,
            api_request_queue_ms: 2_000,
            api_rate_per_s: 20,
            api_rate_burst: 100,
            api_anonymous_rate_per_s: 20,
            api_anonymous_rate_burst: 100,
            api_body_timeout_ms: 10_000,
            api_body_min_bytes_per_s: 1_024,
            api_body_grace_ms: 2_000,
            api_max_waiters: 256,
            api_max_waiters_per_tenant: 128,
            api_max_waiters_per_principal: 32,
            api_wait_poll_ms: 250,
            api_public_url: None,
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
        api: ApiSettings,
    }

    #[test]
    fn defaults_and_bounds() {
        let cli = Cli::try_parse_from(["bin"]).unwrap();
        if std::env::var_os("API_ADDR").is_none() {
            assert_eq!(cli.api.api_addr.to_string(), "127.0.0.1:8080");
        }
        assert!(Cli::try_parse_from(["bin", "--api-max-waiters=0"]).is_err());
        for zero in [
            "--api-max-connections=0",
            "--api-header-timeout-ms=0",
            "--api-max-concurrent-requests=0",
            "--api-request-queue-ms=0",
            "--api-rate-per-s=0",
            "--api-rate-burst=0",
            "--api-max-concurrent-requests-per-principal=0",
            "--api-anonymous-rate-per-s=0",
            "--api-anonymous-rate-burst=0",
            "--api-body-timeout-ms=0",
            "--api-body-min-bytes-per-s=0",
            "--api-max-waiters-per-tenant=0",
            "--api-max-waiters-per-principal=0",
        ] {
            assert!(Cli::try_parse_from(["bin", zero]).is_err(), "{zero}");
        }
        assert!(Cli::try_parse_from(["bin", "--api-wait-poll-ms=5"]).is_err());
        let cli = Cli::try_parse_from(["bin", "--api-addr=0.0.0.0:9000", "--api-wait-poll-ms=100"])
            .unwrap();
        assert_eq!(cli.api.api_addr.to_string(), "0.0.0.0:9000");
        assert_eq!(cli.api.wait_poll(), Duration::from_millis(100));
        let listening = SocketAddr::from(([127, 0, 0, 1], 43210));
        if std::env::var_os("API_PUBLIC_URL").is_none() {
            assert_eq!(
                cli.api.public_url(listening).unwrap().as_str(),
                "http://127.0.0.1:43210"
            );
            let everywhere = SocketAddr::from(([0, 0, 0, 0], 8080));
            let refused = cli.api.public_url(everywhere).unwrap_err();
            assert!(refused.contains("API_PUBLIC_URL"), "{refused}");
        }
        let cli =
            Cli::try_parse_from(["bin", "--api-public-url=https://fleet.example.com/"]).unwrap();
        assert_eq!(
            cli.api.public_url(listening).unwrap().as_str(),
            "https://fleet.example.com"
        );
        assert!(cli
            .api
            .public_url(SocketAddr::from(([0, 0, 0, 0], 8080)))
            .is_ok());
        assert!(Cli::try_parse_from(["bin", "--api-public-url=fleet.example.com"]).is_err());
    }

    #[test]
    fn body_deadlines_and_the_request_share_have_defaults() {
        let cli = Cli::try_parse_from(["bin"]).unwrap();
        let pace = BodyPace {
            total: Duration::from_secs(10),
            min_bytes_per_s: 1_024,
            grace: Duration::from_secs(2),
        };
        assert_eq!(cli.api.body_pace(), pace);
        assert_eq!(ApiSettings::default().body_pace(), pace);
        assert_eq!(cli.api.request_share(), 16);
        assert_eq!(ApiSettings::default().request_share(), 16);
        let small = Cli::try_parse_from(["bin", "--api-max-concurrent-requests=4"]).unwrap();
        assert_eq!(small.api.request_share(), 4);
    }

    #[test]
    fn waiter_shares_are_cut_to_the_whole() {
        let caps = |args: &[&str]| {
            Cli::try_parse_from([&["bin"], args].concat())
                .unwrap()
                .api
                .waiter_caps()
        };
        assert_eq!(caps(&[]).ok(), ShareCaps::new(256, 128, 32).ok());
        assert_eq!(ApiSettings::default().waiter_caps(), caps(&[]));
        assert_eq!(
            caps(&["--api-max-waiters=1"]).ok(),
            ShareCaps::new(1, 1, 1).ok()
        );
    }
}
