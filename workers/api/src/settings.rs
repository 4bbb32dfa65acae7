//! fleet-api's own settings (flags with env), on top of the common ones.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ApiSettings {
    /// Where the HTTP API listens (apart from ADMIN_ADDR).
    #[arg(long, env = "API_ADDR", default_value = "127.0.0.1:8080")]
    pub api_addr: SocketAddr,

    /// Requests that may wait on an operation (`wait_for`) at the same time; more get 429.
    #[arg(long, env = "API_MAX_WAITERS", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub api_max_waiters: u32,

    /// How often the rows of waited-on operations are read (one statement for all of
    /// them), so how late a waiter may hear of a change.
    #[arg(long, env = "API_WAIT_POLL_MS", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(20..=10_000))]
    pub api_wait_poll_ms: u64,

    /// The API's public base URL, as browsers reach it (default `http://` + API_ADDR).
    /// The console's sign-in redirect is `<API_PUBLIC_URL>/console/auth/callback`, and
    /// its cookies are `Secure` when this is https.
    #[arg(long, env = "API_PUBLIC_URL")]
    pub api_public_url: Option<String>,
}

impl ApiSettings {
    pub fn wait_poll(&self) -> Duration {
        Duration::from_millis(self.api_wait_poll_ms)
    }

    /// `API_PUBLIC_URL` without a trailing slash, or `http://` + the address listened on.
    pub fn public_url(&self, listening: SocketAddr) -> String {
        match &self.api_public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{listening}"),
        }
    }

    pub fn max_waiters(&self) -> usize {
        self.api_max_waiters as usize
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            api_addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            api_max_waiters: 256,
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
        assert!(Cli::try_parse_from(["bin", "--api-wait-poll-ms=5"]).is_err());
        let cli = Cli::try_parse_from(["bin", "--api-addr=0.0.0.0:9000", "--api-wait-poll-ms=100"])
            .unwrap();
        assert_eq!(cli.api.api_addr.to_string(), "0.0.0.0:9000");
        assert_eq!(cli.api.wait_poll(), Duration::from_millis(100));
    }
}
