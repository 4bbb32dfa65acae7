//! The transactional half of webhook ingest: the dedup insert, the link to an operation
//! row (held `FOR UPDATE` until the commit), carrying out the pure decision of
//! `fleet_core::webhook`, and the outcome bookkeeping on the event row. Every function runs inside
//! the caller's transaction; nothing here commits.

use deadpool_postgres::Transaction;
use fleet_core::{OpRef, PayloadHash, ProviderName, Status};
use tokio_postgres::Row;
use tracing::warn;

use super::{
    evidence, Decided, ReportedObject, StoredWebhook, WebhookEvent, WebhookOutcome, WEBHOOK_ACTOR,
};
use crate::rows::{provider_at, typed_at, OPERATION_COLUMNS};
use crate::transition::Param;
use crate::{transition_in, OperationRow, StoreError, Transition, TransitionOutcome};
use fleet_core::confirmation::Confirmation;
use fleet_core::webhook::{
    check_identity, decide_linked, EventKind, LinkedRow, Reported, RowIdentity, WebhookDecision,
    NOT_APPLICABLE, ON_DISPUTED, ON_ESCALATED,
};
use fleet_core::Action;
use fleet_core::Reason;

const INSERT: &str = "
INSERT INTO webhook_events (provider, event_id, event_type, received_at, payload_hash, reference, object_id, object)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (provider, event_id) DO NOTHING
RETURNING 1";

const STORED_HASH: &str =
    "SELECT payload_hash FROM webhook_events WHERE provider = $1 AND event_id = $2";

const FINISH: &str = "
UPDATE webhook_events SET operation_id = $3, tenant_id = $5, outcome = $4,
    applied_at = CASE WHEN $3::text IS NULL THEN NULL ELSE now() END
WHERE provider = $1 AND event_id = $2
RETURNING EXTRACT(EPOCH FROM (now() - received_at))::float8";

/// Sets `escalated_at` (never the status) and records why, with the event as evidence.
const ESCALATE: &str = "
WITH escalated AS (
    UPDATE operations SET escalated_at = COALESCE(escalated_at, now()), updated_at = now()
    WHERE operation_id = $1 AND tenant_id = $6
    RETURNING operation_id, tenant_id, fence
)
INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, fence, actor, reason, evidence)
SELECT operation_id, tenant_id, 'webhook_conflict', $2, fence, $3, $4, $5 FROM escalated";

/// A disputed or escalated row is a person's: only the event log learns of the webhook.
/// The row is held FOR UPDATE, so its fence is the one the decision saw.
const NOTE: &str = "
INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, fence, actor, reason, evidence)
SELECT operation_id, tenant_id, 'webhook_conflict', $2, fence, $3, $4, $5
FROM operations WHERE operation_id = $1 AND tenant_id = $6";

/// A decision carried out, before its event row records it.
struct Settled {
    outcome: WebhookOutcome,
    moved: Option<(Status, TransitionOutcome)>,
}

impl Settled {
    fn only(outcome: WebhookOutcome) -> Settled {
        Settled {
            outcome,
            moved: None,
        }
    }
}

/// Dedup insert, link, decide, record: the whole first sight of an event.
pub(super) async fn ingest_in(
    tx: &Transaction<'_>,
    ev: &WebhookEvent,
) -> Result<Decided, StoreError> {
    let insert = tx.prepare_cached(INSERT).await?;
    let object = ev.object.to_json();
    let params: [Param<'_>; 8] = [
        &ev.provider.as_str(),
        &ev.event_id,
        &ev.event_type,
        &ev.received_at,
        &ev.payload_hash.as_str(),
        &ev.object.reference,
        &ev.object.id,
        &object,
    ];
    // A concurrent first delivery holds the key until it commits; this waits, then sees it.
    if tx.query_opt(&insert, &params).await?.is_none() {
        let stored: Option<String> = tx
            .query_opt(STORED_HASH, &[&ev.provider.as_str(), &ev.event_id])
            .await?
            .map(|r| r.get(0));
        let same_payload = stored.as_deref() == Some(ev.payload_hash.as_str());
        return Ok(Decided {
            outcome: WebhookOutcome::Duplicate { same_payload },
            moved: None,
            receive_to_apply_s: None,
        });
    }
    let settled = match EventKind::of(&ev.event_type) {
        EventKind::Unsupported => Settled::only(WebhookOutcome::IgnoredType),
        EventKind::Status { action, reported } => match link(tx, ev).await? {
            Some(row) => settle_in(tx, &row, ev, action, reported).await?,
            None => Settled::only(WebhookOutcome::Unlinked),
        },
    };
    finish(tx, ev, settled).await
}

/// Applies the unlinked events of `op` against its row, oldest first.
pub(super) async fn apply_unlinked_in(
    tx: &Transaction<'_>,
    op: OpRef<'_>,
) -> Result<Vec<(ProviderName, Decided)>, StoreError> {
    let Some(mut row) = lock_by_id(tx, op).await? else {
        return Ok(Vec::new());
    };
    let pending = tx
        .query(&unlinked_sql(true), &[&op.operation_id, &op.tenant_id])
        .await?;
    let mut decided = Vec::with_capacity(pending.len());
    for stored in pending.iter().map(stored_webhook) {
        let ev = stored?.event;
        let settled = match EventKind::of(&ev.event_type) {
            EventKind::Unsupported => Settled::only(WebhookOutcome::IgnoredType),
            EventKind::Status { action, reported } => {
                settle_in(tx, &row, &ev, action, reported).await?
            }
        };
        decided.push((ev.provider, finish(tx, &ev, settled).await?));
        // The next event is decided against the row as this one left it.
        row = lock_by_id(tx, op)
            .await?
            .expect("a row held FOR UPDATE cannot vanish");
    }
    Ok(decided)
}

/// The unlinked events naming an operation (`$1` of tenant `$2`), by the reference the
/// provider echoes (the operation's stored key) or by its external id.
pub(super) fn unlinked_sql(lock: bool) -> String {
    format!(
        "SELECT w.provider, w.event_id, w.event_type, w.received_at, w.payload_hash, w.reference, w.object_id, w.object
         FROM webhook_events w JOIN operations o ON o.operation_id = $1 AND o.tenant_id = $2
         WHERE w.operation_id IS NULL AND w.outcome = 'unlinked' AND w.provider = o.provider
           AND (w.reference = o.idempotency_key OR (o.external_id IS NOT NULL AND w.object_id = o.external_id))
         ORDER BY w.received_at, w.event_id
         {}",
        if lock { "FOR UPDATE OF w SKIP LOCKED" } else { "" }
    )
}

pub(super) fn stored_webhook(r: &Row) -> Result<StoredWebhook, StoreError> {
    let object: Option<serde_json::Value> = r.get("object");
    let object: ReportedObject = object
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    Ok(StoredWebhook {
        reference: r.get("reference"),
        object_id: r.get("object_id"),
        event: WebhookEvent {
            provider: provider_at(r, "provider")?,
            event_id: r.get("event_id"),
            event_type: r.get("event_type"),
            received_at: r.get("received_at"),
            payload_hash: typed_at(r, "payload_hash", PayloadHash::parse)?,
            object,
        },
    })
}

/// The operation the event is about, held until the commit: by the reference it echoes
/// (the key stored at intake, unique across tenants), else by the provider's object id.
/// Several rows with one external id would be a data incident: the event stays unlinked
/// rather than pick one.
async fn link(tx: &Transaction<'_>, ev: &WebhookEvent) -> Result<Option<OperationRow>, StoreError> {
    if let Some(reference) = &ev.object.reference {
        let sql = format!(
            "SELECT {OPERATION_COLUMNS} FROM operations WHERE idempotency_key = $1 FOR UPDATE"
        );
        let stmt = tx.prepare_cached(&sql).await?;
        if let Some(row) = tx.query_opt(&stmt, &[reference]).await? {
            return OperationRow::from_row(&row).map(Some);
        }
    }
    let Some(object_id) = &ev.object.id else {
        return Ok(None);
    };
    let sql = format!(
        "SELECT {OPERATION_COLUMNS} FROM operations WHERE provider = $1 AND external_id = $2
         ORDER BY operation_id LIMIT 2 FOR UPDATE"
    );
    let rows = tx.query(&sql, &[&ev.provider.as_str(), object_id]).await?;
    match rows.as_slice() {
        [] => Ok(None),
        [one] => OperationRow::from_row(one).map(Some),
        [..] => {
            warn!(provider = %ev.provider, event_id = %ev.event_id, "several operations share the event's object id; left unlinked");
            Ok(None)
        }
    }
}

async fn lock_by_id(
    tx: &Transaction<'_>,
    op: OpRef<'_>,
) -> Result<Option<OperationRow>, StoreError> {
    let sql = format!(
        "SELECT {OPERATION_COLUMNS} FROM operations WHERE operation_id = $1 AND tenant_id = $2 FOR UPDATE"
    );
    let stmt = tx.prepare_cached(&sql).await?;
    tx.query_opt(&stmt, &[&op.operation_id, &op.tenant_id])
        .await?
        .as_ref()
        .map(OperationRow::from_row)
        .transpose()
}

/// Decides a linked status report against the held row (`fleet_core::webhook::decide_linked`)
/// and carries the decision out.
async fn settle_in(
    tx: &Transaction<'_>,
    row: &OperationRow,
    ev: &WebhookEvent,
    action: Action,
    reported: Reported,
) -> Result<Settled, StoreError> {
    let status = row.status;
    let identity = RowIdentity {
        reference: row.idempotency_key.as_str(),
        provider: row.provider.as_str(),
        action: row.action.wire_name(),
        external_id: row.external_id.as_deref(),
        payload: &row.payload,
    };
    let linked = LinkedRow {
        status,
        escalated: row.escalated_at.is_some(),
    };
    let decision = decide_linked(
        linked,
        check_identity(action, ev.provider.as_str(), identity, ev.object.identity()),
        reported,
    );
    let operation_id = row.operation_id.clone();
    let tenant_id = row.tenant_id.clone();
    match decision {
        WebhookDecision::Apply(event) => {
            let t = Transition {
                reason: Some(Reason::Webhook),
                evidence: Some(evidence(ev, None)),
                external_id: ev.object.id.as_deref(),
                result: Some(ev.object.to_json()),
                // The provider's signed event is the receipt of a success.
                confirmation: ev
                    .object
                    .id
                    .as_ref()
                    .map(|object_id| Confirmation::Webhook {
                        object_id: object_id.clone(),
                        webhook_event_id: ev.event_id.clone(),
                    }),
                error_code: reported.error_code(ev.object.failure_code.as_deref()),
                ..Transition::new(row.key(), status, row.fence, event, WEBHOOK_ACTOR)
            };
            match transition_in(tx, t, None).await? {
                moved @ TransitionOutcome::Moved { to, .. } => Ok(Settled {
                    outcome: WebhookOutcome::Applied {
                        operation_id,
                        tenant_id,
                        from: status,
                        to,
                    },
                    moved: Some((status, moved)),
                }),
                // Impossible while the row is held and `decide` applies only allowed
                // edges; if it ever happens, record it for an operator, never guess.
                TransitionOutcome::Stale | TransitionOutcome::Refused(_) => {
                    record_conflict(tx, Conflict::Escalate, row, ev, NOT_APPLICABLE).await
                }
            }
        }
        WebhookDecision::Ignore => Ok(Settled::only(WebhookOutcome::IgnoredTransition {
            operation_id,
            tenant_id,
        })),
        WebhookDecision::Escalate(reason) => {
            record_conflict(tx, Conflict::Escalate, row, ev, reason).await
        }
        WebhookDecision::NoteOnDisputed => {
            record_conflict(tx, Conflict::Note, row, ev, ON_DISPUTED).await
        }
        WebhookDecision::NoteOnEscalated => {
            record_conflict(tx, Conflict::Note, row, ev, ON_ESCALATED).await
        }
    }
}

/// What a webhook that contradicts its row does to it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Conflict {
    /// Hands the row to a person ([`ESCALATE`]).
    Escalate,
    /// The row is a person's already: only its history learns of the event ([`NOTE`]).
    Note,
}

/// Writes the `webhook_conflict` history row with `reason`, escalating the row or not.
async fn record_conflict(
    tx: &Transaction<'_>,
    conflict: Conflict,
    row: &OperationRow,
    ev: &WebhookEvent,
    reason: Reason,
) -> Result<Settled, StoreError> {
    let sql = match conflict {
        Conflict::Escalate => {
            warn!(operation_id = %row.operation_id, status = %row.status, event_id = %ev.event_id, event_type = %ev.event_type, reason = reason.as_str(), "webhook contradicts the operation; escalated");
            ESCALATE
        }
        Conflict::Note => NOTE,
    };
    // Both statements take the same parameters.
    tx.execute(
        sql,
        &[
            &row.operation_id.as_str(),
            &row.status.as_str(),
            &WEBHOOK_ACTOR,
            &reason.as_str(),
            &evidence(ev, Some(reason)),
            &row.tenant_id,
        ],
    )
    .await?;
    Ok(Settled::only(WebhookOutcome::Escalated {
        operation_id: row.operation_id.clone(),
        tenant_id: row.tenant_id.clone(),
        reason,
    }))
}

/// Records on the event row what was done with it.
async fn finish(
    tx: &Transaction<'_>,
    ev: &WebhookEvent,
    settled: Settled,
) -> Result<Decided, StoreError> {
    let (operation_id, tenant_id) = match settled.outcome.operation() {
        Some(op) => (Some(op.operation_id), Some(op.tenant_id)),
        None => (None, None),
    };
    let stored = settled
        .outcome
        .stored()
        .expect("a first sight always has a stored outcome");
    let finish = tx.prepare_cached(FINISH).await?;
    let r = tx
        .query_one(
            &finish,
            &[
                &ev.provider.as_str(),
                &ev.event_id,
                &operation_id,
                &stored,
                &tenant_id,
            ],
        )
        .await?;
    Ok(Decided {
        outcome: settled.outcome,
        moved: settled.moved,
        receive_to_apply_s: r.get(0),
    })
}
