//! The start-up and drain sequence every worker binary shares, so that each `main.rs`
//! stays a few lines: telemetry, metrics, the Postgres pool, the broker settings, the
//! admin server with its readiness checks, and the shutdown signal; and what several
//! workers build from their settings on top of it ([`providers`]), and the whole start of
//! the workers that call providers ([`run_provider_worker`]).

mod provider_worker;
mod providers;
mod worker;

pub use provider_worker::{run_provider_worker, ProviderWorkerDeps};
pub use providers::intake_rules;
pub use worker::Worker;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use fleet_broker::{BrokerConfig, BrokerHealth, Publisher};
use fleet_runtime::{
    init_worker_tracing, install_metrics, serve_admin, shutdown_token, CommonArgs, Readiness,
};
use fleet_store::StoreAs;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What a started worker holds, its store held as component `R` (its database role's
/// capabilities). `finish` drains the admin server after `run` returned.
pub struct Boot<R> {
    pub store: StoreAs<R>,
    pub broker: BrokerConfig,
    pub broker_health: BrokerHealth,
    pub readiness: Readiness,
    pub shutdown: CancellationToken,
    pub admin_addr: SocketAddr,
    admin: JoinHandle<std::io::Result<()>>,
}

const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// Starts the shared parts of worker `R`. The admin server listens on `--admin-addr` (or
/// the worker's own default) before any work begins, so `/livez` answers during start-up.
pub async fn start<R: Worker>(common: &CommonArgs) -> anyhow::Result<Boot<R>> {
    let component = R::NAME;
    init_worker_tracing(common.log_format, &format!("fleet-{component}"));
    let metrics = install_metrics(component);
    let shutdown = shutdown_token();
    let store = StoreAs::<R>::connect(common.database_url.expose(), common.db_pool_size)
        .context("postgres settings")?;
    let broker = broker_config(common);
    let broker_health = BrokerHealth::new();
    let readiness = Readiness::new();
    let ping = store.clone();
    readiness.add_async_explained("postgres", READINESS_TIMEOUT, move || {
        let store = ping.clone();
        async move {
            store
                .check(READINESS_TIMEOUT)
                .await
                .map_err(|unready| unready.cause)
        }
    });
    let health = broker_health.clone();
    readiness.add("broker", Arc::new(move || health.is_connected()));
    let addr = common.admin_addr_or(R::ADMIN_ADDR);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the admin address {addr}"))?;
    let admin_addr = listener.local_addr()?;
    let admin = tokio::spawn(serve_admin(
        listener,
        metrics,
        readiness.clone(),
        shutdown.clone(),
    ));
    tracing::info!(component, version = env!("CARGO_PKG_VERSION"), database = %common.database_url, broker = %common.amqp_url, %admin_addr, "starting");
    until_set_up(&store, &shutdown).await?;
    Ok(Boot {
        store,
        broker,
        broker_health,
        readiness,
        shutdown,
        admin_addr,
        admin,
    })
}

/// How often a worker whose database is not set up looks again.
const SET_UP_POLL: Duration = Duration::from_secs(2);

/// Returns once the database is set up. A database, role or table that does not exist is
/// not an outage that passes: said once, as an error naming what to run, and no work is
/// taken until it is mended (a consumer would take messages that every attempt fails),
/// while `/readyz` says the same. Any other failure (a server that does not answer yet)
/// is left to the worker's own retries, as before.
async fn until_set_up<R: Worker>(
    store: &StoreAs<R>,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let mut said = false;
    loop {
        match store.check(READINESS_TIMEOUT).await {
            Err(unready) if unready.not_set_up => {
                if !said {
                    tracing::error!(cause = %unready, "the database is not set up: run `fleetctl migrate` with this DATABASE_URL; no work is taken until it is");
                    said = true;
                }
            }
            _ => {
                if said {
                    tracing::info!("the database is set up: starting work");
                }
                return Ok(());
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => anyhow::bail!("stopped before the database was set up"),
            () = tokio::time::sleep(SET_UP_POLL) => {}
        }
    }
}

/// The broker settings a worker's flags describe.
pub fn broker_config(common: &CommonArgs) -> BrokerConfig {
    let mut cfg = BrokerConfig::new(common.amqp_url.expose())
        .with_namespace(common.amqp_namespace.clone())
        .with_topology(common.amqp_topology.into());
    cfg.prefetch = common.prefetch;
    cfg
}

impl<R> Boot<R> {
    /// A publisher whose connection the `broker` readiness check follows.
    pub async fn publisher(&self) -> anyhow::Result<Publisher> {
        Ok(Publisher::connect_with_health(&self.broker, &self.broker_health).await?)
    }

    /// Runs the worker's `run` with the shutdown signal, then [`finish`](Self::finish)es.
    /// A `run` that fails returns its error at once, as `main` returning it ends the
    /// process.
    pub async fn serve<F, E>(self, run: impl FnOnce(CancellationToken) -> F) -> anyhow::Result<()>
    where
        F: Future<Output = Result<(), E>>,
        E: std::error::Error + Send + Sync + 'static,
    {
        run(self.shutdown.clone()).await?;
        self.finish().await;
        Ok(())
    }

    /// Stops the admin server once the worker's `run` has drained.
    pub async fn finish(self) {
        self.shutdown.cancel();
        match self.admin.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "admin server stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "admin server task failed"),
        }
        tracing::info!("stopped");
        // The exporter's flush blocks on its own thread's answer.
        let _ = tokio::task::spawn_blocking(fleet_runtime::flush_spans).await;
    }
}
