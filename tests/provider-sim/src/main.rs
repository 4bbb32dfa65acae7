//! `fleet-provider-sim`: the payments provider simulator as a process (for the demo).

use std::net::SocketAddr;

use anyhow::Context as _;
use clap::Parser;
use fleet_provider_sim::SimConfig;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(
    name = "fleet-provider-sim",
    version,
    about = "Simulates the payments provider, the CRM, the orders API and the e-signature provider over HTTP, for tests and the demo"
)]
struct Args {
    /// Where the simulator listens.
    #[arg(long, env = "SIM_ADDR", default_value = "127.0.0.1:8090")]
    addr: SocketAddr,
    /// The API key callers must send as `Authorization: Bearer` (never printed).
    #[arg(
        long,
        env = "SIM_API_KEY",
        default_value = "sk_test_sim",
        hide_env_values = true
    )]
    api_key: String,
    /// How long a new payment stays invisible to the search by reference.
    #[arg(long, env = "SIM_SEARCH_LAG_MS", default_value_t = 0)]
    search_lag_ms: u64,
    /// How long an idempotency key is remembered.
    #[arg(long, env = "SIM_KEY_RETENTION_S", default_value_t = 86_400)]
    key_retention_s: u64,
    /// The status a new payment is answered with (`pending` completes later by webhook).
    #[arg(long, env = "SIM_DEFAULT_PAYMENT_STATUS", default_value = "succeeded",
          value_parser = ["succeeded", "pending"])]
    default_payment_status: String,
    /// How long a new deal stays invisible to the search by external id.
    #[arg(long, env = "SIM_CRM_SEARCH_LAG_MS", default_value_t = 0)]
    crm_search_lag_ms: u64,
    /// Answer every deal create with `202 queued` and create the deal later.
    #[arg(long, env = "SIM_CRM_ASYNC_CREATE", default_value_t = false,
          action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    crm_async_create: bool,
    /// With SIM_CRM_ASYNC_CREATE, how long after its 202 a queued deal is created.
    #[arg(long, env = "SIM_CRM_ASYNC_DELAY_MS", default_value_t = 500)]
    crm_async_delay_ms: u64,
    /// How long an e-signature idempotency key is remembered.
    #[arg(long, env = "SIM_ESIGN_KEY_RETENTION_S", default_value_t = 3_600)]
    esign_key_retention_s: u64,
    /// How long a new envelope stays invisible to the search by external_ref.
    #[arg(long, env = "SIM_ESIGN_SEARCH_LAG_MS", default_value_t = 0)]
    esign_search_lag_ms: u64,
    /// Send every envelope on its own (false: it waits for the admin route's settle).
    #[arg(long, env = "SIM_ESIGN_AUTO_SEND", default_value_t = true,
          action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    esign_auto_send: bool,
    /// With SIM_ESIGN_AUTO_SEND, how long after its creation an envelope is sent.
    #[arg(long, env = "SIM_ESIGN_SEND_DELAY_MS", default_value_t = 200)]
    esign_send_delay_ms: u64,
    /// Requests per second each provider API admits (payments with refunds and payees,
    /// the CRM, orders, e-signatures, each on its own); above it 429 with Retry-After: 1.
    /// Unset: no limit.
    #[arg(long, env = "SIM_RATE_LIMIT_PER_S", value_parser = clap::value_parser!(u32).range(1..))]
    rate_limit_per_s: Option<u32>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let config = SimConfig {
        api_key: args.api_key,
        search_lag_ms: args.search_lag_ms,
        key_retention_s: args.key_retention_s,
        default_payment_status: args.default_payment_status,
        crm_search_lag_ms: args.crm_search_lag_ms,
        crm_async_create: args.crm_async_create,
        crm_async_delay_ms: args.crm_async_delay_ms,
        esign_key_retention_s: args.esign_key_retention_s,
        esign_search_lag_ms: args.esign_search_lag_ms,
        esign_auto_send: args.esign_auto_send,
        esign_send_delay_ms: args.esign_send_delay_ms,
        rate_limit_per_s: args.rate_limit_per_s,
    };
    // The handler is installed before the simulator listens: a SIGTERM that follows the
    // "listening" line at once (a supervisor, a test) is then always a clean stop, never
    // the default action's kill.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    // `config` prints with the API key redacted.
    tracing::info!(?config, "configured");
    let sim = fleet_provider_sim::spawn(config, listener).await?;
    tracing::info!(addr = %sim.addr, "provider simulator listening");
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("waiting for ctrl-c")?,
        _ = terminate.recv() => {}
    }
    tracing::info!("shutting down");
    sim.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn every_argument_has_help_text() {
        let cmd = super::Args::command();
        let bare: Vec<_> = cmd
            .get_arguments()
            .filter(|a| {
                !matches!(a.get_id().as_str(), "help" | "version") && a.get_help().is_none()
            })
            .map(|a| a.get_id().to_string())
            .collect();
        assert!(bare.is_empty(), "without help text: {bare:?}");
    }
}
