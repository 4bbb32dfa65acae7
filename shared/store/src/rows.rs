//! Row types, named exactly as the columns (a serialised row reads as the row itself).

use chrono::{DateTime, Utc};
use fleet_core::history::HistoryKind;
use fleet_core::{
    Action, ApprovalStatus, AttemptOutcome, IdempotencyKey, OpRef, OperationId, PayloadHash,
    ProviderName, Reason, Role, Snapshot, StatementSubject, Status, Subject,
};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::row::RowIndex;
use tokio_postgres::Row;

use crate::StoreError;

/// A reason column (`status_reason`, `operation_events.reason`) as core names it. A name
/// no [`Reason`] has is an error, never a guess: a row written by a newer build is read
/// by a build that knows its reasons.
pub(crate) fn reason_at<I>(r: &Row, column: I) -> Result<Option<Reason>, StoreError>
where
    I: RowIndex + std::fmt::Display,
{
    let stored: Option<String> = r.try_get(&column)?;
    stored
        .map(|s| {
            Reason::parse(&s)
                .ok_or_else(|| StoreError::Unreadable(format!("{column}: unknown reason {s:?}")))
        })
        .transpose()
}

/// A column holding one of core's typed texts (an id, a hash, a key, an action), read
/// through `parse`. Text the type does not admit is an error naming the column, never a
/// guess: the database's constraints admit only such text, so this is a row written
/// behind their back or by a newer build.
pub(crate) fn typed_at<T, E: std::fmt::Display>(
    r: &Row,
    column: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, StoreError> {
    let stored: &str = r.try_get(column)?;
    parse(stored).map_err(|e| unreadable(column, stored, e))
}

/// [`typed_at`] for a nullable column.
pub(crate) fn typed_opt_at<T, E: std::fmt::Display>(
    r: &Row,
    column: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<Option<T>, StoreError> {
    let stored: Option<&str> = r.try_get(column)?;
    stored
        .map(|s| parse(s).map_err(|e| unreadable(column, s, e)))
        .transpose()
}

fn unreadable(column: &str, stored: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unreadable(format!("{column}: {stored:?}: {e}"))
}

/// An action column by its wire name.
pub(crate) fn action_at(r: &Row, column: &str) -> Result<Action, StoreError> {
    typed_at(r, column, |s| {
        Action::parse(s).ok_or("not an action of the catalogue")
    })
}

/// A provider column by its name.
pub(crate) fn provider_at(r: &Row, column: &str) -> Result<ProviderName, StoreError> {
    typed_at(r, column, |s| {
        ProviderName::parse(s).ok_or("not a provider")
    })
}

/// A principal's role column.
pub(crate) fn role_at(r: &Row, column: &str) -> Result<Role, StoreError> {
    typed_at(r, column, |s| Role::parse(s).ok_or("not a role"))
}

/// A status column (`from_status`, `to_status`) that may be empty.
pub(crate) fn status_opt_at(r: &Row, column: &str) -> Result<Option<Status>, StoreError> {
    typed_opt_at(r, column, |s| Status::parse(s).ok_or("not a status"))
}

// How every compare-and-set on `operations` is written: one plain
// `UPDATE operations … WHERE operation_id = $1 AND tenant_id = $t AND status = $n AND fence = $m …`.
//
// Correct under concurrency: at READ COMMITTED, an UPDATE that waited for another
// transaction's row lock re-checks its WHERE on the newest version of that row, so a
// concurrent change of some other column (a lookup's bookkeeping, the sweeper's redrive
// mark, a lease renewal) never makes it miss a row whose status and fence still match.
// (Joining on a `ctid` locked in a CTE does not have this property: the row's new
// version is invisible to the outer statement's snapshot, and the CAS reports a stale
// row that is not stale.)
//
// Planned by primary key whatever the statistics say: every status value a CAS compares
// (`status`, `approval_status`) is a bound parameter, never a literal, and the pool's
// connections run with `plan_cache_mode = force_generic_plan` (see `pool.rs`). A generic
// plan never substitutes parameter values, so no partial index on status can have its
// predicate proven, and the one index left that answers `operation_id = $1 AND
// tenant_id = $t` is the primary key. A literal status, or a custom plan, would let a
// lagging estimate pick a partial status index instead
// (`tests/fleet-tests/tests/all/store_cas.rs` checks the plans
// with statistics that say such an index is empty).

/// The `operations` columns every read selects, plus two flags computed with the
/// database clock (docs/design.md#database-clock: time comes from Postgres).
pub(crate) const OPERATION_COLUMNS: &str = "operation_id, tenant_id, action, provider, target, supersedes, rationale, \
    payload, payload_hash, policy_version, data_version, idempotency_key, \
    approval_status, approval_expires_at, approved_hash, decided_by, decided_at, \
    status, status_reason, fence, lease_owner, lease_expires_at, attempts, external_id, provider_request_id, \
    result, error_code, deadline_at, unknown_since, escalated_at, resolved_at, created_at, updated_at, \
    lookup_failures, next_lookup_at, signatures_required, payee, trace_parent, \
    (approval_expires_at <= now()) AS approval_expired, \
    (lease_expires_at IS NOT NULL AND lease_expires_at <= now()) AS lease_expired, \
    (deadline_at IS NOT NULL AND deadline_at <= now()) AS deadline_passed";

#[derive(Debug, Clone, Serialize)]
pub struct OperationRow {
    pub operation_id: OperationId,
    pub tenant_id: String,
    pub action: Action,
    pub provider: ProviderName,
    pub target: Option<String>,
    pub supersedes: Option<String>,
    pub rationale: Option<String>,
    pub payload: Value,
    pub payload_hash: PayloadHash,
    pub policy_version: String,
    pub data_version: String,
    pub idempotency_key: IdempotencyKey,
    pub approval_status: ApprovalStatus,
    pub approval_expires_at: DateTime<Utc>,
    pub approved_hash: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub status: Status,
    pub status_reason: Option<Reason>,
    pub fence: i64,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub attempts: i32,
    pub external_id: Option<String>,
    pub provider_request_id: Option<String>,
    pub result: Option<Value>,
    pub error_code: Option<String>,
    pub deadline_at: Option<DateTime<Utc>>,
    pub unknown_since: Option<DateTime<Utc>>,
    pub escalated_at: Option<DateTime<Utc>>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub lookup_failures: i32,
    pub next_lookup_at: Option<DateTime<Utc>>,
    /// How many of its approvals must carry their approver's signature (fixed at intake).
    pub signatures_required: i16,
    /// The payee as the provider's directory described it at intake
    /// (`fleet_core::payee::PayeeEvidence`), for an action that names one.
    pub payee: Option<Value>,
    /// The W3C `traceparent` its intake stored (`fleet_core::trace_context`); `None` for an
    /// operation stored before operations had one.
    #[serde(skip)]
    pub trace_parent: Option<String>,
    #[serde(skip)]
    pub approval_expired: bool,
    #[serde(skip)]
    pub lease_expired: bool,
    #[serde(skip)]
    pub deadline_passed: bool,
}

impl OperationRow {
    pub(crate) fn from_row(r: &Row) -> Result<OperationRow, StoreError> {
        Ok(OperationRow {
            operation_id: typed_at(r, "operation_id", OperationId::parse)?,
            tenant_id: r.get("tenant_id"),
            action: action_at(r, "action")?,
            provider: provider_at(r, "provider")?,
            target: r.get("target"),
            supersedes: r.get("supersedes"),
            rationale: r.get("rationale"),
            payload: r.get("payload"),
            payload_hash: typed_at(r, "payload_hash", PayloadHash::parse)?,
            policy_version: r.get("policy_version"),
            data_version: r.get("data_version"),
            idempotency_key: typed_at(r, "idempotency_key", IdempotencyKey::parse)?,
            approval_status: ApprovalStatus::parse(r.get("approval_status"))
                .expect("the approval_status CHECK constraint admits only known names"),
            approval_expires_at: r.get("approval_expires_at"),
            approved_hash: r.get("approved_hash"),
            decided_by: r.get("decided_by"),
            decided_at: r.get("decided_at"),
            status: Status::parse(r.get("status"))
                .expect("the status CHECK constraint admits only known names"),
            status_reason: reason_at(r, "status_reason")?,
            fence: r.get("fence"),
            lease_owner: r.get("lease_owner"),
            lease_expires_at: r.get("lease_expires_at"),
            attempts: r.get("attempts"),
            external_id: r.get("external_id"),
            provider_request_id: r.get("provider_request_id"),
            result: r.get("result"),
            error_code: r.get("error_code"),
            deadline_at: r.get("deadline_at"),
            unknown_since: r.get("unknown_since"),
            escalated_at: r.get("escalated_at"),
            resolved_at: r.get("resolved_at"),
            created_at: r.get("created_at"),
            updated_at: r.get("updated_at"),
            lookup_failures: r.get("lookup_failures"),
            next_lookup_at: r.get("next_lookup_at"),
            signatures_required: r.get("signatures_required"),
            payee: r.get("payee"),
            trace_parent: r.get("trace_parent"),
            approval_expired: r.get("approval_expired"),
            lease_expired: r.get("lease_expired"),
            deadline_passed: r.get("deadline_passed"),
        })
    }

    /// The operation's key: its tenant and id (docs/design.md#tenant-boundaries).
    pub fn key(&self) -> OpRef<'_> {
        OpRef::new(&self.tenant_id, self.operation_id.as_str())
    }

    /// What a provider call and a lookup are about: the reference the provider knows it
    /// by (the key stored at intake), target and approved payload.
    pub fn subject(&self) -> Subject<'_> {
        Subject {
            reference: self.idempotency_key.as_str(),
            target: self.target.as_deref(),
            payload: &self.payload,
        }
    }

    /// What an approver's signed statement about this operation is about: every member
    /// read from the row itself, as the API checks a signature and execute verifies it.
    pub fn statement_subject(&self) -> StatementSubject<'_> {
        StatementSubject {
            operation_id: self.operation_id.as_str(),
            tenant_id: &self.tenant_id,
            action: self.action,
            target: self.target.as_deref(),
            payload: &self.payload,
            payload_hash: self.payload_hash.as_str(),
            payee: self.payee.as_ref(),
        }
    }

    /// The snapshot as stored, for recomputing its hash before any call.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            operation_id: self.operation_id.to_string(),
            tenant_id: self.tenant_id.clone(),
            action: self.action.wire_name().to_owned(),
            provider: self.provider.as_str().to_owned(),
            target: self.target.clone(),
            payload: self.payload.clone(),
            policy_version: self.policy_version.clone(),
            data_version: self.data_version.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct AttemptRow {
    pub operation_id: OperationId,
    pub fence: i64,
    pub worker: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `None` until the attempt finished.
    pub outcome: Option<AttemptOutcome>,
    pub http_status: Option<i32>,
    pub replayed: Option<bool>,
    pub external_id: Option<String>,
    pub provider_request_id: Option<String>,
    pub response: Option<Value>,
    pub detail: Option<String>,
}

impl AttemptRow {
    pub(crate) fn from_row(r: &Row) -> Result<AttemptRow, StoreError> {
        Ok(AttemptRow {
            operation_id: typed_at(r, "operation_id", OperationId::parse)?,
            fence: r.get("fence"),
            worker: r.get("worker"),
            started_at: r.get("started_at"),
            finished_at: r.get("finished_at"),
            outcome: r.get::<_, Option<&str>>("outcome").map(|o| {
                AttemptOutcome::parse(o)
                    .expect("the attempts_outcome_check constraint admits only known names")
            }),
            http_status: r.get("http_status"),
            replayed: r.get("replayed"),
            external_id: r.get("external_id"),
            provider_request_id: r.get("provider_request_id"),
            response: r.get("response"),
            detail: r.get("detail"),
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EventRow {
    pub id: i64,
    pub operation_id: OperationId,
    pub kind: HistoryKind,
    pub from_status: Option<Status>,
    pub to_status: Option<Status>,
    pub fence: Option<i64>,
    pub actor: String,
    pub reason: Option<Reason>,
    pub evidence: Option<Value>,
    pub at: DateTime<Utc>,
}

impl EventRow {
    pub(crate) fn from_row(r: &Row) -> Result<EventRow, StoreError> {
        Ok(EventRow {
            id: r.get("id"),
            operation_id: typed_at(r, "operation_id", OperationId::parse)?,
            kind: typed_at(r, "kind", |s| {
                HistoryKind::parse(s).ok_or("not a history kind")
            })?,
            from_status: status_opt_at(r, "from_status")?,
            to_status: status_opt_at(r, "to_status")?,
            fence: r.get("fence"),
            actor: r.get("actor"),
            reason: reason_at(r, "reason")?,
            evidence: r.get("evidence"),
            at: r.get("at"),
        })
    }
}

/// What one provider call said, as written into `attempts`: core's record (built there
/// from the call and its classified outcome), written as it is.
pub use fleet_core::AttemptRecord;
