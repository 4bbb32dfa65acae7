//! One relay round: take the next events from the outbox, publish them as CloudEvents in
//! one confirmed batch, and let the store mark what the broker confirmed.

use fleet_broker::{EventMessage, Publisher};
use fleet_core::events::{EventType, CONTENT_TYPE};
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
    event_type: &'static str,
    routing_key: String,
    body: Vec<u8>,
    /// The operation's trace, for the log line of a confirmed event.
    trace: Option<TraceParent>,
    /// A new span of its operation's trace: the event's `traceparent` attribute and header.
    traceparent: Option<String>,
}

impl Round {
    /// Runs one round. Counts what was published after the commit that recorded it.
    /// `look`: whether to look at the outbox before taking from it (see
    /// `RelayStore::relay_round`).
    pub async fn run(&self, look: bool) -> Result<Relayed, StoreError> {
        let relayed = self
            .store
            .relay_round(self.batch, look, |rows| self.publish(rows))
            .await?;
        // One increment per type in the round rather than one per event: a counter is
        // found by its name and labels at every increment.
        let mut counts: Vec<(EventType, u64)> = Vec::new();
        for t in &relayed.published {
            match counts.iter_mut().find(|(c, _)| c == t) {
                Some((_, n)) => *n += 1,
                None => counts.push((*t, 1)),
            }
        }
        for (t, n) in counts {
            metrics::counter!(m::EVENTS_PUBLISHED_TOTAL, "type" => t.as_str()).increment(n);
        }
        Ok(relayed)
    }

    fn render(&self, r: &OutboxRow) -> Rendered {
        let id = r.event.id();
        let trace = r.trace_parent.as_deref().and_then(TraceParent::parse);
        // A span of the relay's per event, the same on every republish: a repeated event
        // is the same event, byte for byte.
        let hop = trace.as_ref().map(|t| t.named_hop(&id));
        Rendered {
            body: r.event.to_bytes_traced(&self.source, hop.as_ref()),
            event_type: r.event.event_type.cloudevents_type_str(),
            routing_key: r.event.routing_key(),
            traceparent: hop.map(|t| t.to_string()),
            trace,
            id,
        }
    }

    /// Publishes `rows` and returns the ids the broker confirmed.
    async fn publish(&self, rows: Vec<OutboxRow>) -> Vec<i64> {
        let rendered: Vec<Rendered> = rows.iter().map(|r| self.render(r)).collect();
        let messages: Vec<EventMessage<'_>> = rendered
            .iter()
            .map(|r| EventMessage {
                routing_key: &r.routing_key,
                message_id: &r.id,
                event_type: r.event_type,
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
            .zip(&rendered)
            .zip(outcome.confirmed)
            .filter(|(_, confirmed)| *confirmed)
            .map(|((r, rendered), _)| {
                // The fields are worked out only when the line is written.
                debug!(operation_id = %r.event.operation_id, trace_id = rendered.trace.map(|t| t.trace_id_hex()), sequence = r.event.sequence, event_type = r.event.event_type.as_str(), "event confirmed");
                r.id
            })
            .collect()
    }
}
