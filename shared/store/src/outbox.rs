//! The outcome outbox: rows written by the database in the same transaction as the
//! change they report (the `operation_events` trigger), taken here by the relay.
//!
//! - [`Store::relay_outbox`]: take the next events, hand them to a publisher while they
//!   stay locked, mark what the broker confirmed, commit.
//! - [`Store::outbox_gauges`]: backlog and the age of its oldest event.
//! - [`Store::prune_outbox`]: one bounded retention batch of published rows.
//!
//! Order per operation with any number of relays: a relay takes only the *head* of each
//! operation's queue (an unpublished event with no unpublished event before it), locked
//! `FOR UPDATE SKIP LOCKED`, and keeps it locked until its commit marks it published. The
//! next event of that operation is not a head until that commit, and a head another relay
//! holds is skipped; so one operation's events are published one at a time, in sequence
//! order, while different operations go out in parallel and in batches.

use std::future::Future;

use chrono::{DateTime, Utc};
use fleet_core::events::{EventData, EventType, OutcomeEvent};
use fleet_core::view::UtcMicros;
use serde_json::Value;

use crate::component::RelayOutbox;
use crate::prune_cursor::prune_batch;
use crate::PruneCursor;
use crate::StoreAs;
use crate::StoreError;

/// One outbox row: its id (the relay's handle) and the event it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRow {
    pub id: i64,
    pub event: OutcomeEvent,
    /// The `traceparent` its operation's intake stored, for the event's `traceparent`
    /// attribute; `None` for a mandate's event or an operation stored without one.
    pub trace_parent: Option<String>,
}

/// What one [`Store::relay_outbox`] call did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Relayed {
    /// Events taken (and handed to the publisher).
    pub taken: usize,
    /// Events marked published by the commit, in id order.
    pub published: Vec<EventType>,
}

/// The outbox as the relay's gauges show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutboxGauges {
    pub backlog: i64,
    /// `now() - occurred_at` of the oldest unpublished event; 0 when there is none.
    pub oldest_unpublished_age_s: f64,
}

const TAKE: &str = "
SELECT o.id, o.operation_id, o.event_key, o.sequence, o.event_type, o.tenant_id, o.occurred_at, o.data,
       (SELECT x.trace_parent FROM operations x
        WHERE x.operation_id = o.operation_id AND x.tenant_id = o.tenant_id) AS trace_parent
FROM operation_outbox o
WHERE o.published_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM operation_outbox p
                  WHERE p.operation_id = o.operation_id AND p.tenant_id = o.tenant_id
                    AND p.sequence < o.sequence AND p.published_at IS NULL)
ORDER BY o.id
LIMIT $1
FOR UPDATE OF o SKIP LOCKED";

/// The relay's look at an idle outbox: one statement, no transaction (a round that takes
/// nothing would cost BEGIN, TAKE and ROLLBACK), answered from the partial index of
/// unpublished rows.
const ANY_WAITING: &str =
    "SELECT EXISTS (SELECT 1 FROM operation_outbox WHERE published_at IS NULL)";

const MARK: &str = "UPDATE operation_outbox SET published_at = now() WHERE id = ANY($1) AND published_at IS NULL RETURNING id, event_type";

const GAUGES: &str = "
SELECT count(*) AS backlog, COALESCE(EXTRACT(EPOCH FROM now() - min(occurred_at)), 0)::float8 AS oldest
FROM operation_outbox WHERE published_at IS NULL";

/// From the cursor on (`prune_cursor.rs`), so a batch does not walk the index entries of
/// the rows deleted before it.
const PRUNE: &str = "
WITH doomed AS (
    SELECT id FROM operation_outbox
    WHERE published_at < now() - make_interval(secs => $1)
      AND published_at >= COALESCE($3::timestamptz, '-infinity')
    ORDER BY published_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM operation_outbox o USING doomed d WHERE o.id = d.id
    RETURNING o.published_at
)
SELECT count(*) AS deleted, max(published_at) AS newest FROM gone";

impl<R: RelayOutbox> StoreAs<R> {
    /// Takes up to `limit` events (the head of each operation's queue, oldest first),
    /// calls `publish` with them while they stay locked, then marks the ids `publish`
    /// returns (those the broker confirmed) published and commits. An event not returned,
    /// or a commit that fails, leaves the row to be published again: at least once.
    /// `publish` is not called when nothing is waiting. A cheap look at the outbox comes
    /// first, so that an idle outbox costs one read and no transaction.
    pub async fn relay_outbox<F, Fut>(&self, limit: i64, publish: F) -> Result<Relayed, StoreError>
    where
        F: FnOnce(Vec<OutboxRow>) -> Fut,
        Fut: Future<Output = Vec<i64>>,
    {
        self.relay_round(limit, true, publish).await
    }

    /// [`relay_outbox`](Self::relay_outbox), with the look first only when `look`: a
    /// round that follows one that published everything it took skips it, since events
    /// are most likely waiting then and the look would be one more statement per round.
    pub async fn relay_round<F, Fut>(
        &self,
        limit: i64,
        look: bool,
        publish: F,
    ) -> Result<Relayed, StoreError>
    where
        F: FnOnce(Vec<OutboxRow>) -> Fut,
        Fut: Future<Output = Vec<i64>>,
    {
        let mut client = self.client().await?;
        if look {
            let any = client.prepare_cached(ANY_WAITING).await?;
            if !client.query_one(&any, &[]).await?.get::<_, bool>(0) {
                return Ok(Relayed::default());
            }
        }
        let tx = client.transaction().await?;
        let take = tx.prepare_cached(TAKE).await?;
        let rows = tx.query(&take, &[&limit]).await?;
        if rows.is_empty() {
            return Ok(Relayed::default());
        }
        let taken = rows.iter().map(outbox_row).collect::<Result<Vec<_>, _>>()?;
        drop(rows);
        let count = taken.len();
        let confirmed = publish(taken).await;
        let mark = tx.prepare_cached(MARK).await?;
        let mut marked: Vec<(i64, String)> = tx
            .query(&mark, &[&confirmed])
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        tx.commit().await?;
        marked.sort_unstable_by_key(|(id, _)| *id);
        let published = marked
            .iter()
            .filter_map(|(_, t)| EventType::parse(t))
            .collect();
        Ok(Relayed {
            taken: count,
            published,
        })
    }

    pub async fn outbox_gauges(&self) -> Result<OutboxGauges, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(GAUGES).await?;
        let r = client.query_one(&stmt, &[]).await?;
        Ok(OutboxGauges {
            backlog: r.get("backlog"),
            oldest_unpublished_age_s: r.get("oldest"),
        })
    }

    /// Deletes at most `batch` events published more than `older_than_s` seconds ago (by
    /// the database clock), oldest first from `cursor` on, skipping rows another pruner
    /// holds, and moves `cursor` to the newest it deleted. Returns how many it deleted;
    /// the caller repeats while a full batch came back, with the same cursor.
    pub async fn prune_outbox(
        &self,
        older_than_s: u64,
        batch: i64,
        cursor: &PruneCursor,
    ) -> Result<u64, StoreError> {
        if batch < 1 {
            return Err(StoreError::Config(
                "outbox retention batch must be at least 1".into(),
            ));
        }
        let client = self.client().await?;
        prune_batch(&client, PRUNE, older_than_s, batch, cursor).await
    }
}

fn outbox_row(r: &tokio_postgres::Row) -> Result<OutboxRow, StoreError> {
    let stored: String = r.get("event_type");
    // The table's CHECK allows only the known types; a newer schema than this binary
    // must stop the relay loudly rather than publish something it cannot name.
    let event_type = EventType::parse(&stored).ok_or_else(|| {
        StoreError::Config(format!(
            "outbox event type {stored:?} is unknown to this build"
        ))
    })?;
    // Read into its type, unknown members refused: data the outbox trigger writes
    // otherwise than this build's `OperationView` stops the relay, as an unknown type
    // does, rather than reach agents in a shape nobody agreed.
    let data: Value = r.get("data");
    let id: i64 = r.get("id");
    let data = EventData::read(event_type, data)
        .map_err(|e| StoreError::Unreadable(format!("outbox row {id}'s data: {e}")))?;
    Ok(OutboxRow {
        id,
        event: OutcomeEvent {
            operation_id: r.get("operation_id"),
            key: r.get("event_key"),
            sequence: r.get("sequence"),
            event_type,
            tenant_id: r.get("tenant_id"),
            // As the view writes its times (the SQL `fleet_utc`), formatted here rather
            // than by a function call per row in the take.
            time: UtcMicros(r.get::<_, DateTime<Utc>>("occurred_at")).to_string(),
            data,
        },
        trace_parent: r.get("trace_parent"),
    })
}
