//! The admin HTTP server every binary runs: `GET /metrics` (Prometheus text format),
//! `GET /livez` (the process is up and its runtime answers) and `GET /readyz` (every
//! registered [`Readiness`] check passes; otherwise 503 naming the failed checks).
//!
//! The listener is bound by the caller (so tests can bind port 0 and read the address),
//! and the server stops gracefully when the shutdown token is cancelled. Once shutdown
//! has begun `/readyz` answers 503 `shutting_down`, so a load balancer stops routing to us
//! while in-flight requests finish.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::process::collect_process_metrics;
use crate::readiness::Readiness;

const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Clone)]
struct AdminState {
    handle: PrometheusHandle,
    readiness: Readiness,
    shutdown: CancellationToken,
}

/// Serves the admin endpoints on `listener` until `shutdown` is cancelled.
pub async fn serve_admin(
    listener: TcpListener,
    handle: PrometheusHandle,
    readiness: Readiness,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "admin server listening");
    }
    let state = AdminState {
        handle,
        readiness,
        shutdown: shutdown.clone(),
    };
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

fn router(state: AdminState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn metrics(State(state): State<AdminState>) -> impl IntoResponse {
    collect_process_metrics();
    let body = state.handle.render();
    ([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], body)
}

async fn livez() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): State<AdminState>) -> (StatusCode, String) {
    if state.shutdown.is_cancelled() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: shutting_down\n".to_owned(),
        );
    }
    let report = state.readiness.evaluate().await;
    if report.is_ready() {
        (StatusCode::OK, "ok\n".to_owned())
    } else {
        tracing::debug!(failed = ?report.failed, "readiness check failed");
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {}\n", report.describe()),
        )
    }
}
