//! Logging setup shared by every binary: `tracing` events filtered by `RUST_LOG`
//! (default `info`), written to **stderr** as JSON lines or human-readable text.
//!
//! Why stderr: `fleetctl` prints its results (hashes, tables, JSON) on stdout, and scripts
//! pipe them; logs must never mix into that. Container runtimes collect both streams, so
//! the workers lose nothing by following the same rule.
//!
//! Text format: one line per event, whatever the values hold: control characters in
//! them are escaped ([`crate::log_escape`]).
//!
//! JSON format: one object per line, event fields flattened into the top level, plus
//! `timestamp`, `level`, `target` and the current span (`span`) when there is one.
//! Log identifiers and outcomes only; never payloads, tokens or keys
//! (docs/design.md#no-secrets-in-logs).
//!
//! A worker's spans can also be exported over OTLP ([`init_worker_tracing`], `crate::otel`).

use std::io::IsTerminal;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line (what log shippers want).
    Json,
    /// Human-readable lines (what a developer's terminal wants).
    #[default]
    Text,
}

/// Libraries whose debug and trace events can carry message bodies, query parameters or
/// headers (tokio-postgres logs statement parameters at debug, lapin frame contents at
/// trace). Whatever `RUST_LOG` asks for, they log at most `info`: payload values and
/// credentials never reach a log line through them.
const CAPPED_AT_INFO: &[&str] = &[
    "tokio_postgres",
    "postgres_protocol",
    "sqlx",
    "lapin",
    "amq_protocol",
    "hyper",
    "hyper_util",
    "reqwest",
    "h2",
    "rustls",
];

/// The MCP SDK logs every message it receives or sends at debug and trace (a tool call's
/// arguments, so payload values), and at info, for each request of a stateless server, the
/// client's description of itself and the start and end of the request: at most `warn`.
const CAPPED_AT_WARN: &[&str] = &["rmcp"];

/// A second, global filter: an event must pass both it and `RUST_LOG`, so it can only
/// lower what `RUST_LOG` enables, never raise it.
fn third_party_caps() -> Targets {
    let capped = CAPPED_AT_INFO.iter().fold(
        Targets::new().with_default(LevelFilter::TRACE),
        |t, target| t.with_target(*target, LevelFilter::INFO),
    );
    CAPPED_AT_WARN.iter().fold(capped, |t, target| {
        t.with_target(*target, LevelFilter::WARN)
    })
}

/// Installs the global `tracing` subscriber.
///
/// Safe to call more than once in a process (integration tests start several workers in
/// one process): the first call wins and later calls change nothing. An invalid
/// `RUST_LOG` falls back to `info` rather than failing start-up.
pub fn init_tracing(format: LogFormat) {
    init_tracing_with_default(format, "info");
}

/// As [`init_tracing`], with another filter when `RUST_LOG` is unset (the operator CLI
/// prints its results on stdout and keeps stderr for warnings).
pub fn init_tracing_with_default(format: LogFormat, default_filter: &str) {
    install(format, default_filter, None);
}

/// As [`init_tracing`], for a worker whose binary is `service_name`: its spans are also
/// exported over OTLP when an endpoint is configured (`crate::otel`).
pub fn init_worker_tracing(format: LogFormat, service_name: &str) {
    install(format, "info", Some(service_name));
}

fn install(format: LogFormat, default_filter: &str, service_name: Option<&str>) {
    let tracer = service_name.and_then(crate::otel::tracer);
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // `try_init` fails only when a subscriber is already installed, which is fine here.
    let _already_installed = match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .finish()
            .with(third_party_caps())
            .with(tracer.map(|t| tracing_opentelemetry::layer().with_tracer(t)))
            .try_init(),
        LogFormat::Text => builder
            .fmt_fields(crate::log_escape::escaped_fields())
            .with_ansi(std::io::stderr().is_terminal())
            .finish()
            .with(third_party_caps())
            .with(tracer.map(|t| tracing_opentelemetry::layer().with_tracer(t)))
            .try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn init_twice_is_harmless() {
        init_tracing(LogFormat::Json);
        init_tracing(LogFormat::Text);
        tracing::info!(operation_id = "op_test", "still logging");
    }

    #[test]
    fn formats_parse_from_their_lower_case_names() {
        assert_eq!(LogFormat::from_str("json", false), Ok(LogFormat::Json));
        assert_eq!(LogFormat::from_str("text", false), Ok(LogFormat::Text));
        assert!(LogFormat::from_str("yaml", false).is_err());
    }
}
