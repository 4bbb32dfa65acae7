//! The receiver's HTTP/1 server: a bound on everything a client controls, so that a
//! flood of slow or silent connections holds bounded memory and cannot keep a provider's
//! delivery out for long.
//!
//! - at most `max_connections` open connections: at the cap the server stops accepting,
//!   and new connections wait in the kernel's accept backlog (no memory of ours) until
//!   one closes;
//! - the request head (line and headers) must arrive within `header_timeout`, on a new
//!   connection and between two requests of a kept-alive one, so silent or trickling
//!   clients, and idle ones, are closed;
//! - a head may not exceed [`MAX_HEAD_BYTES`] (hyper's read buffer, 431 beyond it), so
//!   each connection buffers at most that much before a handler runs. The body is
//!   bounded by the handler ([`crate::receiver`]): its size, its read time, and how many
//!   are read at once.

use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// The largest request head read (the signature header alone may be 8 KiB).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// How long in-flight requests may take to finish at shutdown (a body read and a
/// publish confirm fit in it with the default timeouts).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(25);
/// Pause after a failed accept (out of file descriptors, say) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown`; then stops accepting, lets in-flight
/// requests finish (bounded by [`DRAIN_TIMEOUT`]) and closes idle connections.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, max_connections = limits.max_connections, "webhook receiver listening");
    }
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept(), if connections.len() < limits.max_connections => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, router.clone(), limits.header_timeout, shutdown.clone()));
                }
                Err(e) => {
                    warn!(error = %e, "webhook receiver could not accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!(
            left = connections.len(),
            "webhook connections still open after the drain timeout; closing them"
        );
    }
    Ok(())
}

async fn serve_connection(
    stream: TcpStream,
    router: Router,
    header_timeout: Duration,
    shutdown: CancellationToken,
) {
    // Small answers: do not let Nagle hold one back.
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "could not disable Nagle's algorithm");
    }
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEAD_BYTES)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
    tokio::pin!(connection);
    let ended = tokio::select! {
        ended = connection.as_mut() => ended,
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = ended {
        // A client that was too slow, too large or went away: nothing to do but close.
        debug!(error = %e, "webhook connection closed with an error");
    }
}
