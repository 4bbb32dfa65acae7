//! fleet-reconcile: brings the operation log in line with the provider. It creates
//! nothing: it reads attempts and looks the provider up (never a side-effecting call),
//! then resolves, sends a provably-absent operation back for a same-key retry, or
//! escalates to an operator. Doorbells and a sweeper both lead to the same
//! `Reconciler::reconcile`, so a lost message delays work but never strands it.

mod audit;
mod deps;
mod gauges;
mod handler;
mod lookup;
mod reconciler;
mod series;
mod settings;
mod sweep;

use std::sync::Arc;
use std::time::Duration;

use fleet_broker::{BrokerError, Queue};
use tokio_util::sync::CancellationToken;

pub use deps::ReconcileDeps;
pub use handler::ReconcileHandler;
pub use reconciler::Reconciler;
pub use settings::ReconcileSettings;

/// Consumes `operations.reconcile`, runs the sweeper and the gauges until `shutdown`.
pub async fn run(deps: ReconcileDeps, shutdown: CancellationToken) -> Result<(), BrokerError> {
    let reconciler = Arc::new(Reconciler::new(&deps));
    series::series_at_zero();
    let gauges = tokio::spawn(gauges::run(
        deps.store.clone(),
        deps.settings.sweep_interval(),
        Duration::from_secs(u64::from(deps.settings.approvals_expiring_soon_s)),
        shutdown.clone(),
    ));
    let sweeper = tokio::spawn(sweep::run(
        reconciler.clone(),
        deps.settings.clone(),
        deps.concurrency,
        shutdown.clone(),
    ));
    let handler = Arc::new(ReconcileHandler::new(reconciler));
    let consumed = fleet_broker::consume_with_health(
        deps.broker,
        Queue::OperationsReconcile,
        handler,
        deps.concurrency,
        shutdown.clone(),
        &deps.health,
    )
    .await;
    shutdown.cancel();
    let _ = tokio::join!(gauges, sweeper);
    consumed
}
