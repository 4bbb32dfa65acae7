//! fleet-webhook-ingest: receives signed provider events and applies only allowed
//! transitions. This release declares the topology, serves health and metrics and keeps
//! the `webhooks.ingest` queue drained safely: nothing publishes to it yet (the signed
//! HTTP receiver comes next), and anything that arrives is dead-lettered with a reason,
//! kept for replay rather than acknowledged and lost.

use std::sync::Arc;

use fleet_broker::{BrokerConfig, BrokerError, BrokerHealth, Delivery, Disposition, Handler, Queue};
use tokio_util::sync::CancellationToken;

pub struct WebhookDeps {
    pub broker: BrokerConfig,
    pub health: BrokerHealth,
    pub concurrency: usize,
}

pub struct ParkingHandler;

impl Handler for ParkingHandler {
    async fn handle(&self, _delivery: Delivery<'_>) -> Disposition {
        tracing::warn!(reason = "webhook_consumer_not_enabled", "webhook event parked in the dead-letter queue");
        Disposition::DeadLetter { reason: "webhook_consumer_not_enabled".into() }
    }
}

pub async fn run(deps: WebhookDeps, shutdown: CancellationToken) -> Result<(), BrokerError> {
    fleet_broker::consume_with_health(deps.broker, Queue::WebhooksIngest, Arc::new(ParkingHandler), deps.concurrency, shutdown, &deps.health).await
}
