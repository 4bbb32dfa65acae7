//! fleet-execute: claims an approved operation with a fenced lease and calls its provider
//! once, as its action's catalogue entry says: with the operation's idempotency key, or
//! conditional on what was approved, or (for a provider without keys) after a search by
//! our reference. Any answer that does not prove the outcome makes the operation
//! `unknown` for reconcile; this worker never retries it blindly.

mod admitted;
mod answer;
mod batches;
mod call;
mod facts;
mod handler;
mod lease;
mod mandate_check;
mod pause;
mod payer_check;
mod perform;
mod searched_create;
mod series;
mod settings;
mod signatures;

use std::sync::Arc;

use fleet_broker::{BrokerConfig, BrokerError, BrokerHealth, Publisher, Queue};
use fleet_providers::Providers;
use fleet_store::ExecuteStore;
use tokio_util::sync::CancellationToken;

pub use handler::ExecuteHandler;
pub use settings::ExecuteSettings;

/// Everything `run` needs, built by `main` (or by a test).
pub struct ExecuteDeps {
    pub store: ExecuteStore,
    pub broker: BrokerConfig,
    pub health: BrokerHealth,
    /// Rings `operations.reconcile` after an ambiguous outcome.
    pub publisher: Publisher,
    /// Every provider, with what it documents: a searched create waits for a provider's
    /// search lag and maximum request time after an earlier uncertain attempt, and no
    /// request is sent on a key the provider may have forgotten.
    pub providers: Arc<Providers>,
    pub settings: ExecuteSettings,
    pub concurrency: usize,
}

/// Consumes `operations.execute` until `shutdown` is cancelled.
pub async fn run(deps: ExecuteDeps, shutdown: CancellationToken) -> Result<(), BrokerError> {
    series::series_at_zero();
    let broker = deps.broker.clone();
    let health = deps.health.clone();
    let concurrency = deps.concurrency;
    let handler = Arc::new(ExecuteHandler::new(deps));
    fleet_broker::consume_with_health(
        broker,
        Queue::OperationsExecute,
        handler,
        concurrency,
        shutdown,
        &health,
    )
    .await
}
