//! prepare's one write: the immutable snapshot, idempotent by (tenant, operation id).

use fleet_core::supersede::{judge, Correction, Replaceable, Superseded};
use fleet_core::{OpRef, Status, ValidIntent};
use std::sync::LazyLock;

use crate::component::StoreIntents;
use crate::many_rows::{columns_of, of_each_row, rows_of_values};
use crate::rows::reason_at;
use crate::transition::Param;
use crate::StoreAs;
use crate::{BatchError, StoreError};
use fleet_core::Reason;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrepareOutcome {
    Inserted,
    /// The same snapshot was prepared before (a redelivery): nothing to do.
    AlreadyPrepared,
    /// The id is taken in the intent's tenant by a different snapshot: the agent reused an
    /// id. Refused. (Another tenant's operation with the id is another operation.)
    Conflict {
        stored_hash: String,
    },
    /// The intent supersedes an operation it may not replace (a `fleet_core::supersede`
    /// refusal, such as `supersedes_forbidden`); nothing was written.
    Refused(&'static str),
}

// `ON CONFLICT DO NOTHING` names no index on purpose: every unique index is then an arbiter.
// The provider's idempotency key (derived from the tenant and the id) has its own unique
// index, and two deliveries of one intent racing each other may meet that index first; with
// only the primary key as arbiter the loser was refused `23505` instead of being told the
// intent was stored already.
macro_rules! insert_columns {
    () => {
        "operation_id, tenant_id, action, provider, target, supersedes, rationale,
                            payload, payload_hash, policy_version, data_version, idempotency_key,
                            approval_expires_at, submitted_by, approvals_required, signatures_required, payee, risk,
                            trace_parent"
    };
}
macro_rules! insert_values {
    () => {
        "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now() + make_interval(secs => $13), $14, $15, $16, $17, $18, $20"
    };
}
macro_rules! event_columns {
    () => {
        "operation_id, tenant_id, kind, to_status, fence, actor, evidence"
    };
}
macro_rules! event_values {
    () => {
        "'prepared', 'not_started', 0, 'prepare',
           jsonb_build_object('payload_hash', $9::text) || COALESCE($19::jsonb, '{}'::jsonb)"
    };
}

const INSERT: &str = concat!(
    "
WITH inserted AS (
    INSERT INTO operations (",
    insert_columns!(),
    ")
    VALUES (",
    insert_values!(),
    ")
    ON CONFLICT DO NOTHING
    RETURNING operation_id, tenant_id
), event AS (
    INSERT INTO operation_events (",
    event_columns!(),
    ")
    SELECT operation_id, tenant_id, ",
    event_values!(),
    "
    FROM inserted
)
SELECT count(*) AS inserted FROM inserted"
);

/// The types of [`INSERT`]'s parameters, in order (those Postgres infers for them there):
/// [`INSERT_MANY`] takes an array of each.
const INSERT_TYPES: [&str; 20] = [
    "text", "text", "text", "text", "text", "text", "text", "jsonb", "text", "text", "text",
    "text", "float8", "text", "int2", "int2", "jsonb", "jsonb", "jsonb", "text",
];

/// [`INSERT`] over many intents in one statement: `$k` is the array of the `$k`s of
/// [`insert_params`] (one element per intent), and each value is read from the intent's
/// row of values `i` (`i.pk`), so the row, its `prepared` event and their values are the
/// same text in both. The operations are inserted in the order given (the caller sorts
/// them by operation and tenant, so two such statements take their index entries in one
/// order), and their events in the same order. The intents of one statement are
/// distinct (tenant, operation id) pairs, so each inserted row joins exactly one row of
/// values. Returns `n`, the ordinality, of each intent inserted.
static INSERT_MANY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH {},
inserted AS (
    INSERT INTO operations ({})
    SELECT {} FROM i ORDER BY i.n
    ON CONFLICT DO NOTHING
    RETURNING operation_id, tenant_id
), event AS (
    INSERT INTO operation_events ({})
    SELECT i.p1, i.p2, {}
    FROM inserted JOIN i ON i.p1 = inserted.operation_id AND i.p2 = inserted.tenant_id
    ORDER BY i.n
)
SELECT i.n FROM inserted JOIN i ON i.p1 = inserted.operation_id AND i.p2 = inserted.tenant_id",
        rows_of_values(&INSERT_TYPES),
        insert_columns!(),
        of_each_row(insert_values!()),
        event_columns!(),
        of_each_row(event_values!()),
    )
});

/// What intake fixed for an operation besides its snapshot: what it needs before it may
/// run (distinct approvals from its quorum policy, and how many of them must be signed by
/// their approvers), and the evidence of its payee (`fleet_core::payee::PayeeEvidence`,
/// for an action that names one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub approvals_required: i16,
    pub signatures_required: i16,
    pub payee: Option<serde_json::Value>,
    /// The risk cues found at intake (`fleet_core::risk`), for a payment.
    pub risk: Option<serde_json::Value>,
    /// What else intake read of the world for the approver, kept in the `prepared`
    /// history event's evidence (a refund's payment as Stripe described it:
    /// `{"refunded": …}`); an object.
    pub evidence: Option<serde_json::Value>,
    /// The W3C `traceparent` of the intake (`fleet_core::trace_context`): the trace every
    /// later component continues for this operation.
    pub trace_parent: Option<String>,
}

impl From<i16> for Requirement {
    /// A quorum of unsigned approvals.
    fn from(approvals_required: i16) -> Requirement {
        Requirement {
            approvals_required,
            signatures_required: 0,
            payee: None,
            risk: None,
            evidence: None,
            trace_parent: None,
        }
    }
}

impl<R: StoreIntents> StoreAs<R> {
    /// Inserts an intent that replaces `old` after a correction: in one transaction the old
    /// operation is cancelled (if it never started) and the new one inserted, linked to it.
    /// Only the old operation's own submitter (`submitted_by`, `None` for the queue) may
    /// replace it: `fleet_core::supersede::judge` decides, with the old row locked.
    async fn insert_superseding(
        &self,
        intent: &ValidIntent,
        old: &str,
        approvals_required: Requirement,
        submitted_by: Option<&str>,
    ) -> Result<PrepareOutcome, StoreError> {
        if self
            .get(OpRef::new(
                &intent.snapshot.tenant_id,
                intent.operation_id.as_str(),
            ))
            .await?
            .is_some()
        {
            // A redelivery of the correction itself: judged like any other redelivery.
            return self.compare_existing(intent).await;
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        // Only the intent's own tenant's row is read and locked: another tenant's is never
        // waited on (its lock would time a probe, and hold up its own transitions), so it
        // is judged exactly as a missing one.
        let row = tx
            .query_opt(
                "SELECT status, fence, status_reason, tenant_id, action, submitted_by
                 FROM operations WHERE operation_id = $1 AND tenant_id = $2 FOR UPDATE",
                &[&old, &intent.snapshot.tenant_id],
            )
            .await?;
        let superseded = row
            .as_ref()
            .map(|row| {
                Ok::<_, StoreError>(Superseded {
                    tenant_id: row.get(3),
                    action: row.get(4),
                    submitted_by: row.get(5),
                    // The CHECK constraint admits only known names.
                    status: Status::parse(row.get(0)).expect("status CHECK"),
                    fence: row.get(1),
                    reason: reason_at(row, 2)?,
                })
            })
            .transpose()?;
        let correction = Correction {
            tenant_id: &intent.snapshot.tenant_id,
            action: &intent.snapshot.action,
            submitted_by,
        };
        let cancel_old = match judge(&correction, superseded.as_ref()) {
            Replaceable::CancelIt => true,
            Replaceable::AlreadyEnded => false,
            Replaceable::Refused(refusal) => return Ok(PrepareOutcome::Refused(refusal)),
        };
        let fence = superseded.map_or(0, |s| s.fence);
        let inserted = insert_on(&tx, intent, approvals_required, submitted_by).await?;
        if !inserted {
            drop(tx);
            return self.compare_existing(intent).await;
        }
        let mut outcome = None;
        if cancel_old {
            let t = crate::Transition {
                reason: Some(Reason::Superseded),
                evidence: Some(
                    serde_json::json!({ "superseded_by": intent.operation_id.as_str() }),
                ),
                ..crate::Transition::new(
                    OpRef::new(&intent.snapshot.tenant_id, old),
                    Status::NotStarted,
                    fence,
                    fleet_core::Event::CancelBeforeStart,
                    "prepare",
                )
            };
            outcome = Some(crate::transition_in(&tx, t, None).await?);
        }
        tx.commit().await?;
        if let Some(o) = outcome {
            o.observe(Status::NotStarted);
        }
        Ok(PrepareOutcome::Inserted)
    }

    /// Whether this very snapshot is stored already (its id, with its hash): a redelivery
    /// or a resend, whatever the world says of it now.
    pub async fn prepared_before(&self, intent: &ValidIntent) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let found = client
            .query_opt(
                "SELECT 1 FROM operations WHERE operation_id = $1 AND tenant_id = $3 AND payload_hash = $2",
                &[
                    &intent.operation_id.as_str(),
                    &intent.payload_hash.as_str(),
                    &intent.snapshot.tenant_id,
                ],
            )
            .await?;
        Ok(found.is_some())
    }

    async fn compare_existing(&self, intent: &ValidIntent) -> Result<PrepareOutcome, StoreError> {
        let client = self.client().await?;
        let stored = client
            .query_one(
                "SELECT payload_hash FROM operations WHERE operation_id = $1 AND tenant_id = $2",
                &[&intent.operation_id.as_str(), &intent.snapshot.tenant_id],
            )
            .await?;
        let stored_hash: String = stored.get(0);
        if stored_hash == intent.payload_hash.as_str() {
            Ok(PrepareOutcome::AlreadyPrepared)
        } else {
            Ok(PrepareOutcome::Conflict { stored_hash })
        }
    }

    /// Inserts the prepared operation (approval pending, expiring after the intent's TTL,
    /// needing `approvals_required` distinct approvers) with its `prepared` event, in one
    /// statement and one commit. `submitted_by` is the authenticated principal of the
    /// intake that received it (none for the queue).
    pub async fn insert_prepared(
        &self,
        intent: &ValidIntent,
        approvals_required: impl Into<Requirement>,
        submitted_by: Option<&str>,
    ) -> Result<PrepareOutcome, StoreError> {
        let approvals_required = approvals_required.into();
        if let Some(old) = &intent.supersedes {
            return self
                .insert_superseding(intent, old.as_str(), approvals_required, submitted_by)
                .await;
        }
        let client = self.client().await?;
        if insert_on(&client, intent, approvals_required, submitted_by).await? {
            return Ok(PrepareOutcome::Inserted);
        }
        drop(client);
        self.compare_existing(intent).await
    }
}

/// The values [`INSERT`] binds besides the intent's own fields.
struct Bound<'a> {
    hash: &'a str,
    supersedes: Option<&'a str>,
    key: String,
    ttl_s: f64,
    approvals_required: i16,
    signatures_required: i16,
    payee: Option<&'a serde_json::Value>,
    risk: Option<&'a serde_json::Value>,
    evidence: Option<&'a serde_json::Value>,
    submitted_by: Option<&'a str>,
    trace_parent: Option<&'a str>,
}

impl<'a> Bound<'a> {
    fn new(
        intent: &'a ValidIntent,
        required: &'a Requirement,
        submitted_by: Option<&'a str>,
    ) -> Bound<'a> {
        Bound {
            hash: intent.payload_hash.as_str(),
            supersedes: intent.supersedes.as_ref().map(|o| o.as_str()),
            key: intent
                .operation_id
                .idempotency_key(&intent.snapshot.tenant_id)
                .as_str()
                .to_owned(),
            ttl_s: intent.approval_ttl_seconds as f64,
            approvals_required: required.approvals_required,
            signatures_required: required.signatures_required,
            payee: required.payee.as_ref(),
            risk: required.risk.as_ref(),
            evidence: required.evidence.as_ref(),
            submitted_by,
            trace_parent: required.trace_parent.as_deref(),
        }
    }
}

fn insert_params<'p>(intent: &'p ValidIntent, b: &'p Bound<'_>) -> [Param<'p>; 20] {
    let s = &intent.snapshot;
    [
        &s.operation_id,
        &s.tenant_id,
        &s.action,
        &s.provider,
        &s.target,
        &b.supersedes,
        &intent.rationale,
        &s.payload,
        &b.hash,
        &s.policy_version,
        &s.data_version,
        &b.key,
        &b.ttl_s,
        &b.submitted_by,
        &b.approvals_required,
        &b.signatures_required,
        &b.payee,
        &b.risk,
        &b.evidence,
        &b.trace_parent,
    ]
}

/// The insert itself; `false` when the tenant already holds the operation id.
async fn insert_on(
    client: &impl deadpool_postgres::GenericClient,
    intent: &ValidIntent,
    approvals_required: Requirement,
    submitted_by: Option<&str>,
) -> Result<bool, StoreError> {
    // Prepared once per connection: the hot path costs one round trip, not a Parse first.
    let insert = client.prepare_cached(INSERT).await?;
    let bound = Bound::new(intent, &approvals_required, submitted_by);
    let row = client
        .query_one(&insert, &insert_params(intent, &bound))
        .await?;
    Ok(row.get::<_, i64>("inserted") == 1)
}

impl<R: StoreIntents> StoreAs<R> {
    /// [`Store::insert_prepared`] for several intents from the queue (none superseding
    /// another), each with the principal that sent it if known, in one transaction and one
    /// statement ([`INSERT_MANY`]), in (operation id, tenant) order, with one commit.
    /// Outcomes come in the order given. An intent whose id was taken, before or by an
    /// earlier intent of the same batch with the same id, is compared with the stored
    /// snapshot after the commit: a redelivery, or an id reused for another snapshot.
    pub async fn insert_prepared_many(
        &self,
        items: &[(&ValidIntent, Requirement, Option<&str>)],
    ) -> Result<Vec<PrepareOutcome>, BatchError> {
        let rolled_back = |e: tokio_postgres::Error| BatchError::RolledBack(e.into());
        let mut client = self.client().await.map_err(BatchError::RolledBack)?;
        let tx = client.transaction().await.map_err(rolled_back)?;
        let insert = tx.prepare_cached(&INSERT_MANY).await.map_err(rolled_back)?;
        let key = |i: usize| {
            (
                items[i].0.operation_id.as_str(),
                items[i].0.snapshot.tenant_id.as_str(),
            )
        };
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| key(i));
        // The first of each (operation id, tenant): a repeat would join its row twice.
        order.dedup_by_key(|i| key(*i));
        let bound: Vec<Bound<'_>> = items
            .iter()
            .map(|(intent, required, submitted_by)| Bound::new(intent, required, *submitted_by))
            .collect();
        let rows: Vec<[Param<'_>; 20]> = order
            .iter()
            .map(|&i| insert_params(items[i].0, &bound[i]))
            .collect();
        let columns = columns_of(&rows);
        let columns: Vec<Param<'_>> = columns.iter().map(|c| c as Param<'_>).collect();
        let inserted = tx.query(&insert, &columns).await.map_err(rolled_back)?;
        tx.commit()
            .await
            .map_err(|e| BatchError::CommitUnknown(e.into()))?;
        let mut outcomes: Vec<Option<PrepareOutcome>> = vec![None; items.len()];
        for row in &inserted {
            let n: i64 = row.get("n");
            outcomes[order[n as usize - 1]] = Some(PrepareOutcome::Inserted);
        }
        let mut out = Vec::with_capacity(items.len());
        for ((intent, _, _), outcome) in items.iter().zip(outcomes) {
            out.push(match outcome {
                Some(o) => o,
                // A redelivery, or an id reused for another snapshot.
                None => self
                    .compare_existing(intent)
                    .await
                    .map_err(BatchError::CommitUnknown)?,
            });
        }
        Ok(out)
    }
}
