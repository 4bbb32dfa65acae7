//! fleet-reconcile: brings the operation log in line with the provider. It never calls a
//! side-effecting provider endpoint. This release consumes the reconcile doorbells and
//! publishes the fleet-wide gauges (unknown, escalated, oldest unknown age, backlog) from
//! the rows; provider lookups and the sweeper's transitions follow.

mod gauges;
mod handler;
mod settings;

use std::sync::Arc;

use fleet_broker::{BrokerConfig, BrokerError, BrokerHealth, Queue};
use fleet_store::Store;
use tokio_util::sync::CancellationToken;

pub use handler::ReconcileHandler;
pub use settings::ReconcileSettings;

pub struct ReconcileDeps {
    pub store: Store,
    pub broker: BrokerConfig,
    pub health: BrokerHealth,
    pub settings: ReconcileSettings,
    pub concurrency: usize,
}

/// Consumes `operations.reconcile` and runs the gauge loop until `shutdown`.
pub async fn run(deps: ReconcileDeps, shutdown: CancellationToken) -> Result<(), BrokerError> {
    let gauges = tokio::spawn(gauges::run(deps.store.clone(), deps.settings.sweep_interval(), shutdown.clone()));
    let handler = Arc::new(ReconcileHandler::new(deps.store));
    let consumed = fleet_broker::consume_with_health(deps.broker, Queue::OperationsReconcile, handler, deps.concurrency, shutdown.clone(), &deps.health).await;
    shutdown.cancel();
    let _ = gauges.await;
    consumed
}
