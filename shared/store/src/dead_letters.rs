//! Dead letters kept in Postgres (migrations/0072): the relay keeps each message it takes
//! from a dead-letter queue, the API lists and reads them and records what an operator
//! did with one. Every write goes through an owner's function: the relay cannot resolve a
//! dead letter, the API cannot invent one, and nobody rewrites the record of actions.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::component::{KeepDeadLetters, ReadDeadLetters};
use crate::StoreAs;
use crate::StoreError;

/// A message taken from a dead-letter queue, as the relay keeps it.
#[derive(Debug, Clone)]
pub struct NewDeadLetter<'a> {
    /// The work queue's wire name (`intents.prepare`), without the namespace.
    pub queue: &'a str,
    pub body: &'a [u8],
    pub headers: Value,
    /// The AMQP `user_id` the broker validated for the original publisher.
    pub user_id: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub dead_lettered_at: Option<DateTime<Utc>>,
    /// The message id, or a digest of queue, body and headers.
    pub dedup_key: &'a str,
}

/// One kept dead letter.
#[derive(Debug, Clone)]
pub struct DeadLetterRow {
    pub id: i64,
    pub queue: String,
    pub reason: Option<String>,
    pub first_reason: Option<String>,
    pub body: Vec<u8>,
    pub headers: Value,
    pub user_id: Option<String>,
    pub tenant_id: Option<String>,
    pub dead_lettered_at: Option<DateTime<Utc>>,
    pub kept_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub resolution: Option<String>,
    pub resolved_by: Option<String>,
}

/// One recorded replay or discard.
#[derive(Debug, Clone)]
pub struct DeadLetterAction {
    pub action: String,
    pub actor: String,
    pub outcome: String,
    pub reason: Option<String>,
    pub at: DateTime<Utc>,
}

/// What a listing asks for: unresolved dead letters of these tenants (or naming none),
/// after `after` (an id), optionally of one queue and one reason.
#[derive(Debug, Clone)]
pub struct DeadLetterFilter<'a> {
    pub tenants: &'a [String],
    pub queue: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub after: i64,
    pub limit: i64,
}

const COLUMNS: &str = "id, queue, reason, first_reason, body, headers, user_id, tenant_id, \
     dead_lettered_at, kept_at, resolved_at, resolution, resolved_by";

fn row(r: &tokio_postgres::Row) -> DeadLetterRow {
    DeadLetterRow {
        id: r.get("id"),
        queue: r.get("queue"),
        reason: r.get("reason"),
        first_reason: r.get("first_reason"),
        body: r.get("body"),
        headers: r.get("headers"),
        user_id: r.get("user_id"),
        tenant_id: r.get("tenant_id"),
        dead_lettered_at: r.get("dead_lettered_at"),
        kept_at: r.get("kept_at"),
        resolved_at: r.get("resolved_at"),
        resolution: r.get("resolution"),
        resolved_by: r.get("resolved_by"),
    }
}

impl<R: KeepDeadLetters> StoreAs<R> {
    /// Keeps one message (once: a message kept before returns the earlier row's id).
    /// Committed when it returns, so the caller may ack the message then.
    pub async fn keep_dead_letter(&self, m: &NewDeadLetter<'_>) -> Result<i64, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT fleet_keep_dead_letter($1, $2, $3, $4, $5, $6, $7)")
            .await?;
        let r = client
            .query_one(
                &stmt,
                &[
                    &m.queue,
                    &m.body,
                    &m.headers,
                    &m.user_id,
                    &m.reason,
                    &m.dead_lettered_at,
                    &m.dedup_key,
                ],
            )
            .await?;
        Ok(r.get(0))
    }

    /// Kept dead letters nobody replayed or discarded, by queue.
    pub async fn unresolved_dead_letters(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT queue, count(id) FROM dead_letters WHERE resolved_at IS NULL GROUP BY queue",
            )
            .await?;
        let rows = client.query(&stmt, &[]).await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

impl<R: ReadDeadLetters> StoreAs<R> {
    /// One page of unresolved dead letters, oldest first.
    pub async fn dead_letters(
        &self,
        f: &DeadLetterFilter<'_>,
    ) -> Result<Vec<DeadLetterRow>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM dead_letters
                 WHERE resolved_at IS NULL AND id > $1
                   AND (tenant_id IS NULL OR tenant_id = ANY($2))
                   AND ($3::text IS NULL OR queue = $3)
                   AND ($4::text IS NULL OR reason = $4)
                 ORDER BY id LIMIT $5"
            ))
            .await?;
        let rows = client
            .query(
                &stmt,
                &[&f.after, &f.tenants, &f.queue, &f.reason, &f.limit],
            )
            .await?;
        Ok(rows.iter().map(row).collect())
    }

    /// One dead letter (resolved or not) of these tenants or naming none, with its actions.
    pub async fn dead_letter(
        &self,
        id: i64,
        tenants: &[String],
    ) -> Result<Option<(DeadLetterRow, Vec<DeadLetterAction>)>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM dead_letters
                 WHERE id = $1 AND (tenant_id IS NULL OR tenant_id = ANY($2))"
            ))
            .await?;
        let Some(found) = client.query_opt(&stmt, &[&id, &tenants]).await? else {
            return Ok(None);
        };
        let stmt = client
            .prepare_cached(
                "SELECT action, actor, outcome, reason, at FROM dead_letter_actions
                 WHERE dead_letter_id = $1 ORDER BY id",
            )
            .await?;
        let actions = client
            .query(&stmt, &[&id])
            .await?
            .iter()
            .map(|r| DeadLetterAction {
                action: r.get("action"),
                actor: r.get("actor"),
                outcome: r.get("outcome"),
                reason: r.get("reason"),
                at: r.get("at"),
            })
            .collect();
        Ok(Some((row(&found), actions)))
    }

    /// Records an operator's action on an unresolved dead letter, resolving it when
    /// `resolution` is given. False: unknown or already resolved (nothing recorded).
    pub async fn act_on_dead_letter(
        &self,
        id: i64,
        action: &str,
        actor: &str,
        outcome: &str,
        reason: Option<&str>,
        resolution: Option<&str>,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT fleet_dead_letter_act($1, $2, $3, $4, $5, $6)")
            .await?;
        let r = client
            .query_one(
                &stmt,
                &[&id, &action, &actor, &outcome, &reason, &resolution],
            )
            .await?;
        Ok(r.get(0))
    }
}
