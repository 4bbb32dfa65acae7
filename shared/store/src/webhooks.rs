//! Provider webhook events in Postgres: deduplication by `(provider, event_id)`, linking
//! an event to its operation (by the reference it echoes, else by the provider's object
//! id), and applying only what the state machine allows, in ONE transaction with the
//! dedup insert. A crash anywhere rolls all of it back, so the provider's (or the
//! broker's) redelivery is applied exactly once.
//!
//! - [`Store::ingest_webhook`]: the consumer's one call per verified event.
//! - [`Store::unlinked_webhooks_for`] / [`Store::apply_unlinked_webhooks`]: events that
//!   arrived before they could be linked, applied later by reconcile.
//! - [`Store::prune_webhook_events`]: one bounded retention batch.

mod apply;
mod retention;
mod scope;

use chrono::{DateTime, Utc};
use fleet_core::{OpRef, OperationId, PayloadHash, ProviderName, Reason, Status};
use fleet_runtime::metric_names as m;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::component::ApplyWebhooks;
use crate::component::IngestWebhooks;
use crate::StoreAs;
use crate::{StoreError, TransitionOutcome};

pub use fleet_core::webhook::{
    check_identity, decide, EventKind, ObjectIdentity, Reported, RowIdentity, WebhookDecision,
};
pub use retention::MIN_WEBHOOK_RETENTION_S;

/// The actor named in `operation_events` for everything a webhook did.
pub const WEBHOOK_ACTOR: &str = "webhook-ingest";

/// One verified provider event, as the consumer parsed it from the raw body.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEvent {
    pub provider: ProviderName,
    /// `webhook-id`: stable across the provider's redeliveries.
    pub event_id: String,
    pub event_type: String,
    /// When the receiver accepted it.
    pub received_at: DateTime<Utc>,
    /// `sha256:` + hex of the RFC 8785 form of the whole event body.
    pub payload_hash: PayloadHash,
    pub object: ReportedObject,
}

/// The normalised fields of `data.object`: identifiers, status and money only, never
/// anything personal. Stored as `webhook_events.object` and used as evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedObject {
    pub id: Option<String>,
    pub reference: Option<String>,
    pub status: Option<String>,
    pub amount_minor: Option<i64>,
    pub currency: Option<String>,
    pub failure_code: Option<String>,
}

impl ReportedObject {
    pub fn identity(&self) -> ObjectIdentity<'_> {
        ObjectIdentity {
            id: self.id.as_deref(),
            reference: self.reference.as_deref(),
            amount_minor: self.amount_minor,
            currency: self.currency.as_deref(),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a ReportedObject always serialises")
    }
}

/// What was done with one delivery of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum WebhookOutcome {
    /// First delivery; it moved its operation.
    Applied {
        operation_id: OperationId,
        tenant_id: String,
        from: Status,
        to: Status,
    },
    /// First delivery; linked, but the row already says as much (or more).
    IgnoredTransition {
        operation_id: OperationId,
        tenant_id: String,
    },
    /// First delivery; it contradicts its operation: recorded, row escalated, not applied.
    Escalated {
        operation_id: OperationId,
        tenant_id: String,
        reason: Reason,
    },
    /// First delivery; no operation matches it yet. Stored for reconcile.
    Unlinked,
    /// First delivery of a type that reports no payment or refund status.
    IgnoredType,
    /// Seen before: nothing done. `same_payload` is false when the provider reused the
    /// event id for a different body (logged by the caller).
    Duplicate { same_payload: bool },
}

impl WebhookOutcome {
    /// `webhook_events.outcome`; `None` for a duplicate, which writes nothing.
    pub fn stored(&self) -> Option<&'static str> {
        match self {
            WebhookOutcome::Applied { .. } => Some("applied"),
            WebhookOutcome::IgnoredTransition { .. } => Some("ignored_transition"),
            WebhookOutcome::Escalated { .. } => Some("escalated"),
            WebhookOutcome::Unlinked => Some("unlinked"),
            WebhookOutcome::IgnoredType => Some("ignored_type"),
            WebhookOutcome::Duplicate { .. } => None,
        }
    }

    /// Every value [`WebhookOutcome::label`] gives, so the series can exist from the start.
    pub const LABELS: [&'static str; 6] = [
        "new",
        "duplicate",
        "ignored_transition",
        "escalated",
        "unlinked",
        "ignored_type",
    ];

    /// The `outcome` label of `fleet_webhook_events_total` (`new` = applied; one of
    /// [`WebhookOutcome::LABELS`]).
    pub fn label(&self) -> &'static str {
        match self {
            WebhookOutcome::Applied { .. } => "new",
            WebhookOutcome::Duplicate { .. } => "duplicate",
            WebhookOutcome::IgnoredTransition { .. } => "ignored_transition",
            WebhookOutcome::Escalated { .. } => "escalated",
            WebhookOutcome::Unlinked => "unlinked",
            WebhookOutcome::IgnoredType => "ignored_type",
        }
    }

    /// The operation the event was linked to.
    pub fn operation(&self) -> Option<OpRef<'_>> {
        match self {
            WebhookOutcome::Applied {
                operation_id,
                tenant_id,
                ..
            }
            | WebhookOutcome::IgnoredTransition {
                operation_id,
                tenant_id,
            }
            | WebhookOutcome::Escalated {
                operation_id,
                tenant_id,
                ..
            } => Some(OpRef::new(tenant_id, operation_id.as_str())),
            WebhookOutcome::Unlinked
            | WebhookOutcome::IgnoredType
            | WebhookOutcome::Duplicate { .. } => None,
        }
    }
}

/// An event stored with no operation, as [`Store::unlinked_webhooks_for`] returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredWebhook {
    pub event: WebhookEvent,
    pub reference: Option<String>,
    pub object_id: Option<String>,
}

/// A decided event and what must be counted once its transaction committed.
#[derive(Debug, Clone)]
pub(crate) struct Decided {
    pub(crate) outcome: WebhookOutcome,
    pub(crate) moved: Option<(Status, TransitionOutcome)>,
    pub(crate) receive_to_apply_s: Option<f64>,
}

impl Decided {
    /// Counts a committed decision. `first_sight` is false when reconcile applies a
    /// stored event later: the event itself was counted when it arrived.
    fn observe(&self, provider: ProviderName, first_sight: bool) {
        if let Some((from, moved)) = &self.moved {
            moved.observe(*from);
        }
        if !first_sight {
            return;
        }
        metrics::counter!(m::WEBHOOK_EVENTS_TOTAL, "provider" => provider.as_str(), "outcome" => self.outcome.label()).increment(1);
        if let Some(s) = self.receive_to_apply_s {
            metrics::histogram!(m::WEBHOOK_RECEIVE_TO_APPLY_SECONDS, "provider" => provider.as_str()).record(s.max(0.0));
        }
    }
}

fn evidence(ev: &WebhookEvent, reason: Option<Reason>) -> Value {
    json!({
        "provider": ev.provider,
        "event_id": ev.event_id,
        "event_type": ev.event_type,
        "received_at": ev.received_at,
        "payload_hash": ev.payload_hash,
        "object": ev.object.to_json(),
        "reason": reason.map(Reason::as_str),
    })
}

impl<R: IngestWebhooks> StoreAs<R> {
    /// Deduplicates, links and applies one event in one transaction, then counts it
    /// (`fleet_webhook_events_total`, the receive-to-apply histogram, transitions).
    pub async fn ingest_webhook(&self, ev: &WebhookEvent) -> Result<WebhookOutcome, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let decided = apply::ingest_in(&tx, ev).await?;
        tx.commit().await?;
        decided.observe(ev.provider, true);
        Ok(decided.outcome)
    }
}

impl<R: ApplyWebhooks> StoreAs<R> {
    /// The stored, not yet linked events that name `op`: by their reference (its stored
    /// key), or by the provider object id the operation now records as `external_id`.
    /// Oldest first.
    pub async fn unlinked_webhooks_for(
        &self,
        op: OpRef<'_>,
    ) -> Result<Vec<StoredWebhook>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &apply::unlinked_sql(false),
                &[&op.operation_id, &op.tenant_id],
            )
            .await?;
        rows.iter().map(apply::stored_webhook).collect()
    }

    /// Links and applies (or records, or escalates: the same rules as on arrival) every
    /// unlinked event of `op`, oldest first, in one transaction that holds the
    /// row. Events another replica is applying right now are skipped. Returns what was
    /// done with each.
    pub async fn apply_unlinked_webhooks(
        &self,
        op: OpRef<'_>,
    ) -> Result<Vec<WebhookOutcome>, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let decided = apply::apply_unlinked_in(&tx, op).await?;
        tx.commit().await?;
        Ok(decided
            .into_iter()
            .map(|(provider, d)| {
                d.observe(provider, false);
                d.outcome
            })
            .collect())
    }
}
