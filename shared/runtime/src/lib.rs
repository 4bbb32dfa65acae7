//! Plumbing every fleet binary shares: settings (clap + env), logging, the Prometheus
//! recorder and metric names, the admin server (`/metrics`, `/livez`, `/readyz`),
//! readiness checks, the bounded HTTP server of the doors that face clients and the
//! deadlines of their request bodies, the shutdown signal, redaction of secrets, the clock
//! of periodic jobs and the batches of retention runs, and the crash tests' pause points.
//!
//! A worker's `main` is: parse settings, [`init_tracing`], [`install_metrics`], bind the
//! admin listener and spawn [`serve_admin`], take [`shutdown_token`], then call its
//! library's `run(deps, shutdown)`.

pub mod admin;
pub mod batch;
pub mod body_deadline;
pub mod http_server;
mod log_escape;
pub mod metric_names;
pub mod metrics;
mod otel;
pub mod pacing;
pub mod pause;
pub mod policies;
mod process;
pub mod provider_settings;
pub mod prune;
pub mod readiness;
pub mod redact;
pub mod settings;
pub mod shutdown;
pub mod telemetry;
pub mod ticker;
pub mod trace;
pub mod url_list;
pub mod worker_args;

pub use admin::serve_admin;
pub use batch::Batcher;
pub use body_deadline::{paced, BodyPace, BodyWatch};
pub use http_server::{ConnectionLimits, PeerAddr, RequestSlot, RequestSlots};
pub use metrics::install_metrics;
pub use otel::flush_spans;
pub use pacing::{PaceFuture, Pacer};
pub use policies::{load_policies, PolicyArgs, PolicyLoadError};
pub use provider_settings::{ProviderArgs, ProviderRateArgs, ProviderSettings};
pub use prune::prune_in_batches;
pub use readiness::{Readiness, ReadinessReport, SyncCheck};
pub use redact::{OptionalSecret, RedactedUrl, Secret};
pub use settings::{admin_addrs, undocumented_arguments, AmqpTopology, CommonArgs};
pub use shutdown::shutdown_token;
pub use telemetry::{init_tracing, init_tracing_with_default, init_worker_tracing, LogFormat};
pub use ticker::Ticker;
pub use url_list::split_url_list;
pub use worker_args::{IntakeArgs, ProviderWorkerArgs};

/// Re-exported so binaries name one version of these types.
pub use metrics_exporter_prometheus::PrometheusHandle;
pub use tokio_util::sync::CancellationToken;
