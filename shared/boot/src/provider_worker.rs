//! The workers that take operations off a queue and call their provider (execute and
//! reconcile) read the same flags and are built from the same parts; only their own
//! settings and their `run` differ.

use std::future::Future;
use std::sync::Arc;

use fleet_broker::{BrokerConfig, BrokerHealth, Publisher};
use fleet_providers::Providers;
use fleet_runtime::ProviderWorkerArgs;
use fleet_store::component::RateProviders;
use fleet_store::StoreAs;
use tokio_util::sync::CancellationToken;

use crate::Worker;

/// Everything the `run` of a worker that calls providers needs, its store held as
/// component `R`; built by [`run_provider_worker`] (or by a test).
pub struct ProviderWorkerDeps<R, S> {
    pub store: StoreAs<R>,
    pub broker: BrokerConfig,
    pub health: BrokerHealth,
    /// Rings the queue of the next step (execute rings reconcile after an ambiguous
    /// outcome, reconcile rings execute for a same-key retry).
    pub publisher: Publisher,
    /// Every provider, with what it documents (search lag, maximum request time, key
    /// retention), each request waiting for its slot in the provider's shared schedule.
    pub providers: Arc<Providers>,
    pub settings: S,
    pub concurrency: usize,
}

/// Starts worker `R` from its flags and its own `settings`, builds its deps and serves its `run` until shutdown.
pub async fn run_provider_worker<R, S, F, E>(
    args: ProviderWorkerArgs,
    settings: S,
    run: impl FnOnce(ProviderWorkerDeps<R, S>, CancellationToken) -> F,
) -> anyhow::Result<()>
where
    R: Worker + RateProviders,
    F: Future<Output = Result<(), E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let boot = crate::start::<R>(&args.common).await?;
    let deps = ProviderWorkerDeps {
        store: boot.store.clone(),
        broker: boot.broker.clone(),
        health: boot.broker_health.clone(),
        publisher: boot.publisher().await?,
        providers: boot.paced_providers(&args.providers, &args.rates)?,
        settings,
        concurrency: args.common.concurrency,
    };
    boot.serve(|shutdown| run(deps, shutdown)).await
}
