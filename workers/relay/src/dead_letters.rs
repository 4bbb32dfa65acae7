//! The dead-letter depth gauge, one series per work queue: how many messages wait in its
//! dead-letter queue for a person to look at them. The relay reads it because it already
//! holds a broker connection and runs once per deployment's worth of replicas; each replica
//! reads the same queues, so dashboards and alerts take `max()`.
//!
//! The counter `fleet_messages_dead_lettered_total` says when messages were dead-lettered;
//! this says whether any are still there (nobody replayed or discarded them), which no
//! counter can.

use std::time::Duration;

use fleet_broker::Publisher;
use fleet_runtime::metric_names as m;
use fleet_runtime::Ticker;
use tokio_util::sync::CancellationToken;

/// How often the depths are read (four passive declares on one short-lived channel).
pub const DEPTHS_EVERY: Duration = Duration::from_secs(15);

pub async fn run(publisher: Publisher, shutdown: CancellationToken) {
    let mut ticker = Ticker::new(DEPTHS_EVERY, shutdown);
    while ticker.tick().await {
        match publisher.dead_letter_depths().await {
            Ok(Some(depths)) => {
                for (queue, depth) in depths {
                    metrics::gauge!(m::DEAD_LETTER_QUEUE_DEPTH, "queue" => queue.wire_name())
                        .set(f64::from(depth));
                }
            }
            // Not connected now: the gauges keep their last value until it reconnects.
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not read the dead-letter queues' depths"),
        }
    }
}
