//! One relay round: take the next events from the outbox, publish them as CloudEvents in
//! one confirmed batch, and let the store mark what the broker confirmed.

use fleet_broker::{EventMessage, Publisher};
use fleet_core::events::CONTENT_TYPE;
use fleet_core::trace_context::TraceParent;
use fleet_runtime::metric_names as m;
use fleet_store::{OutboxRow, RelayStore, Relayed, StoreError};
use tracing::{debug, warn};

use crate::pause;

/// What a round needs; built once per relay.
pub(crate) struct Round {
    pub store: RelayStore,
    pub publisher: Publisher,
    /// The CloudEvents `source` of this deployment.
    pub source: String,
    pub batch: i64,
}

/// An event rendered for the wire.
struct Rendered {
    id: String,
    event_type: String,
    routing_key: String,
    body: Vec<u8>,
    /// A new span of its operation's trace: the event's `traceparent` attribute and header.
    traceparent: Option<String>,
}

impl Round {
    /// Runs one round. Counts what was published after the commit that recorded it.
    pub async fn run(&self) -> Result<Relayed, StoreError> {
        let relayed = self
            .store
            .relay_outbox(self.batch, |rows| self.publish(rows))
            .await?;
        for t in &relayed.published {
            metrics::counter!(m::EVENTS_PUBLISHED_TOTAL, "type" => t.as_str()).increment(1);
        }
        Ok(relayed)
    }

    /// Publishes `rows` and returns the ids the broker confirmed.
    async fn publish(&self, rows: Vec<OutboxRow>) -> Vec<i64> {
        let rendered: Vec<Rendered> = rows
            .iter()
            .map(|r| {
                let trace = r
                    .trace_parent
                    .as_deref()
                    .and_then(TraceParent::parse)
                    // A span of the relay's per event, the same on every republish: a
                    // repeated event is the same event, byte for byte.
                    .map(|t| t.named_hop(&r.event.id()));
                Rendered {
                    id: r.event.id(),
                    event_type: r.event.event_type.cloudevents_type(),
                    routing_key: r.event.routing_key(),
                    body: r.event.to_bytes_traced(&self.source, trace.as_ref()),
                    traceparent: trace.map(|t| t.to_string()),
                }
            })
            .collect();
        let messages: Vec<EventMessage<'_>> = rendered
            .iter()
            .map(|r| EventMessage {
                routing_key: &r.routing_key,
                message_id: &r.id,
                event_type: &r.event_type,
                content_type: CONTENT_TYPE,
                body: &r.body,
                traceparent: r.traceparent.as_deref(),
            })
            .collect();
        let outcome = self.publisher.publish_events(&messages).await;
        let failed = outcome.confirmed.iter().filter(|ok| !**ok).count();
        if let Some(error) = &outcome.error {
            metrics::counter!(m::EVENTS_PUBLISH_FAILURES_TOTAL).increment(failed as u64);
            warn!(%error, failed, batch = rows.len(), "events not confirmed by the broker; they stay in the outbox and go out again");
        }
        pause::point(pause::AFTER_PUBLISH).await;
        rows.iter()
            .zip(outcome.confirmed)
            .filter(|(_, confirmed)| *confirmed)
            .map(|(r, _)| {
                let trace_id = r.trace_parent.as_deref().and_then(TraceParent::parse).map(|t| t.trace_id_hex());
                debug!(operation_id = %r.event.operation_id, trace_id, sequence = r.event.sequence, event_type = r.event.event_type.as_str(), "event confirmed");
                r.id
            })
            .collect()
    }
}
