//! The HTTP/1 server of every door that faces clients (fleet-api, the webhook receiver):
//! a bound on everything a client controls, so that a flood of slow or silent connections
//! holds bounded memory and file descriptors and cannot keep everybody else out.
//!
//! - at most `max_connections` open connections: at the cap the server stops accepting,
//!   and new connections wait in the kernel's accept backlog (no memory or descriptor of
//!   ours) until one closes. Keep it below the process's open-file limit, with room for
//!   the database pool and the broker: a server that runs out of descriptors can accept
//!   nobody, and open nothing else either;
//! - the request head (line and headers) must arrive within `header_timeout`, on a new
//!   connection and between two requests of a kept-alive one (the idle timeout), so
//!   silent or trickling clients, and idle ones, are closed;
//! - a head may not exceed `max_head_bytes` (hyper's read buffer, 431 beyond it), so
//!   each connection buffers at most that much before a handler runs. Bodies, and how
//!   many requests run at once ([`RequestSlots`]), are the handlers' to bound
//!   ([`crate::body_deadline`]).
//!
//! Every request carries the address it came from ([`PeerAddr`], in its extensions), for
//! limits that count per source address.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// How long in-flight requests may take to finish at shutdown.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(25);
/// Pause after a failed accept (out of file descriptors, say) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The address a request's connection came from (a proxy's, behind one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    /// For the head of each request, and for the idle time before it.
    pub header_timeout: Duration,
    pub max_head_bytes: usize,
}

/// Serves `router` on `listener` until `shutdown`; then stops accepting, lets in-flight
/// requests finish (bounded by [`DRAIN_TIMEOUT`]) and closes idle connections. `name`
/// says which server in the logs.
pub async fn serve(
    name: &'static str,
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, max_connections = limits.max_connections, "{name} listening");
    }
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept(), if connections.len() < limits.max_connections => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(serve_connection(stream, peer, router.clone(), limits, shutdown.clone()));
                }
                Err(e) => {
                    warn!(error = %e, "{name} could not accept a connection");
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
            "{name}: connections still open after the drain timeout; closing them"
        );
    }
    Ok(())
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    // Small answers: do not let Nagle hold one back.
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "could not disable Nagle's algorithm");
    }
    let service = WithPeer {
        inner: TowerToHyperService::new(router),
        peer,
    };
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_head_bytes)
        .serve_connection(TokioIo::new(stream), service);
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
        debug!(error = %e, "connection closed with an error");
    }
}

/// The router, with each request marked with the address of its connection.
struct WithPeer {
    inner: TowerToHyperService<Router>,
    peer: SocketAddr,
}

impl hyper::service::Service<hyper::Request<Incoming>> for WithPeer {
    type Response = <TowerToHyperService<Router> as hyper::service::Service<
        hyper::Request<Incoming>,
    >>::Response;
    type Error =
        <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<Incoming>>>::Error;
    type Future =
        <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<Incoming>>>::Future;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(PeerAddr(self.peer));
        self.inner.call(request)
    }
}

/// How many requests a server works on at once: a request waits for a slot, and one
/// that finds none by its deadline is refused (503) rather than queued without end.
#[derive(Debug, Clone)]
pub struct RequestSlots(Arc<Semaphore>);

/// A request's slot; dropping it frees the slot.
#[derive(Debug)]
pub struct RequestSlot {
    _permit: OwnedSemaphorePermit,
}

impl RequestSlots {
    pub fn new(slots: usize) -> RequestSlots {
        RequestSlots(Arc::new(Semaphore::new(slots)))
    }

    /// A slot, or `None` when none freed up before `deadline`.
    pub async fn take_by(&self, deadline: Instant) -> Option<RequestSlot> {
        match tokio::time::timeout_at(deadline, self.0.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Some(RequestSlot { _permit: permit }),
            // Timed out, or (never: the semaphore is not closed) closed.
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_waits_for_a_slot_until_its_deadline() {
        let slots = RequestSlots::new(1);
        let soon = || Instant::now() + Duration::from_millis(50);
        let held = slots.take_by(soon()).await.expect("a free slot");
        assert!(slots.take_by(soon()).await.is_none(), "no second slot");
        drop(held);
        assert!(
            slots.take_by(soon()).await.is_some(),
            "a freed slot is reused"
        );
    }
}
