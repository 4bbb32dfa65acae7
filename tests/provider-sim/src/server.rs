//! Serving the router over TCP with one hyper connection per socket, so that a route can
//! close its connection without answering (`DropConnection`), and shutting down.

use std::convert::Infallible;
use std::future::Future;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use crate::config::SimConfig;
use crate::reply::DropConnection;
use crate::router;
use crate::state::App;

/// Connections served at once; further clients wait in the listen backlog.
const MAX_CONNECTIONS: usize = 1_024;
/// How long in-flight requests may take to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed accept (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A simulator serving in the background until `shutdown()` or drop.
#[derive(Debug)]
pub struct RunningSim {
    pub addr: SocketAddr,
    /// `http://<ip>:<port>`, with a loopback ip when the listener is bound to all interfaces.
    pub base_url: String,
    shutdown: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

/// Starts serving `config` on `listener`, in a background task.
pub async fn spawn(config: SimConfig, listener: TcpListener) -> anyhow::Result<RunningSim> {
    let app = App::new(&config)?;
    serve(router::build(app), listener)
}

/// Serves `router` on `listener` in a background task, with the connection loop that can
/// close a connection unanswered (the Stripe simulator's router shares it).
pub(crate) fn serve(router: Router, listener: TcpListener) -> anyhow::Result<RunningSim> {
    let addr = listener.local_addr()?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, router, shutdown_rx));
    Ok(RunningSim {
        addr,
        base_url: format!("http://{}", reachable(addr)),
        shutdown,
        task: Some(task),
    })
}

impl RunningSim {
    /// Stops accepting, lets in-flight requests finish (bounded by a grace period), and
    /// returns once every connection is closed.
    pub async fn shutdown(mut self) {
        self.shutdown.send_replace(true);
        if let Some(task) = self.task.take() {
            if let Err(error) = task.await {
                tracing::warn!(%error, "simulator task ended abnormally");
            }
        }
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(v4) if v4.ip().is_unspecified() => (Ipv4Addr::LOCALHOST, v4.port()).into(),
        SocketAddr::V6(v6) if v6.ip().is_unspecified() => (Ipv6Addr::LOCALHOST, v6.port()).into(),
        SocketAddr::V4(_) | SocketAddr::V6(_) => addr,
    }
}

async fn accept_loop(listener: TcpListener, router: Router, mut shutdown: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept(), if connections.len() < MAX_CONNECTIONS => match accepted {
                Ok((stream, _peer)) => {
                    connections.spawn(serve_connection(stream, router.clone(), shutdown.clone()));
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::warn!(
            left = connections.len(),
            "connections still open after the grace period, closing them"
        );
    }
}

async fn serve_connection(stream: TcpStream, router: Router, mut shutdown: watch::Receiver<bool>) {
    // Small JSON exchanges: do not let Nagle hold a response back.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "could not disable Nagle's algorithm");
    }
    let abort = Arc::new(Notify::new());
    let service = dropping_service(router, abort.clone());
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            // Returning drops the connection and its socket: the client sees the
            // connection close with no response, which is the point of a drop fault.
            () = abort.notified() => return,
            _ = shutdown.changed(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The router as a hyper service that, instead of writing a response marked with
/// `DropConnection`, asks the connection task to close the socket.
fn dropping_service(
    router: Router,
    abort: Arc<Notify>,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = axum::response::Response,
    Error = Infallible,
    Future = impl Future<Output = Result<axum::response::Response, Infallible>> + Send,
> + Clone {
    let router = TowerToHyperService::new(router);
    hyper::service::service_fn(move |request: Request<Incoming>| {
        let response = router.call(request);
        let abort = abort.clone();
        async move {
            let response = response.await?;
            if response.extensions().get::<DropConnection>().is_some() {
                // `notify_one` stores a permit, so the connection task cannot miss it.
                abort.notify_one();
                std::future::pending::<()>().await;
            }
            Ok(response)
        }
    })
}
