//! fleet-execute: claims an approved operation with a fenced lease and calls its provider
//! once, as its action's catalogue entry says: with the operation's idempotency key, or
//! conditional on what was approved, or (for a provider without keys) after a search by
//! our reference. Any answer that does not prove the outcome makes the operation
//! `unknown` for reconcile; this worker never retries it blindly.

mod admitted;
mod answer;
mod batches;
mod bell;
mod call;
mod call_under_lease;
mod deps;
mod earlier;
mod facts;
mod gather;
mod handler;
mod interpret;
mod lease;
mod mandate_check;
mod pause;
mod payee_refused;
mod payer_check;
mod perform;
mod provider_call;
mod record;
mod searched_create;
mod series;
mod settings;
mod signatures;

use std::sync::Arc;

use fleet_broker::{BrokerError, Queue};
use tokio_util::sync::CancellationToken;

pub use deps::ExecuteDeps;
pub use handler::ExecuteHandler;
pub use settings::ExecuteSettings;

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
