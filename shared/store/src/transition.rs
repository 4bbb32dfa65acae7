//! The one store function that changes an operation's status (docs/design.md#one-transition-function): the target
//! status comes from the domain state machine, the UPDATE is a compare-and-set on the
//! expected status AND fence, and the event row is written in the same statement.
//! Zero rows affected is `Stale`, a normal outcome every caller handles.

use std::error::Error;
use std::sync::LazyLock;

use bytes::BytesMut;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};

use fleet_core::confirmation::Confirmation;
use fleet_core::{transition, ApprovalStatus, Event, OpRef, Reason, Refused, Status};
use serde_json::Value;

use fleet_runtime::metric_names as m;

use deadpool_postgres::Transaction;

use crate::component::ClaimAndCall;
use crate::component::MoveOperations;
use crate::many_rows::{of_each_row, rows_of_values};
// Other modules of the store import the parameter type from here.
pub(crate) use crate::many_rows::Param;
use crate::StoreAs;
use crate::{AttemptRecord, StoreError};

/// One requested status change and the columns it sets. Build with `Transition::new`
/// and struct-update syntax for the optional parts.
#[derive(Debug, Clone)]
pub struct Transition<'a> {
    /// The operation, by tenant and id.
    pub op: OpRef<'a>,
    pub expected: Status,
    /// The fence the caller holds (execute) or read (everyone else).
    pub fence: i64,
    pub event: Event,
    pub actor: &'a str,
    /// Stored by its wire name ([`Reason::as_str`]), which the outbox trigger reads.
    pub reason: Option<Reason>,
    pub evidence: Option<Value>,
    pub external_id: Option<&'a str>,
    pub provider_request_id: Option<&'a str>,
    pub result: Option<Value>,
    pub error_code: Option<&'a str>,
    /// Sets `deadline_at = now() + deadline_s` (accepted rows wait for a final answer until then).
    pub deadline_s: Option<f64>,
    pub escalate: bool,
    /// Sets the approval columns too (a rejection cancels and records who decided).
    pub approval_status: Option<ApprovalStatus>,
    pub decided_by: Option<&'a str>,
    /// How the person behind `actor` signed in (`token`, `oidc`), for a person's decision.
    pub signed_in_with: Option<&'a str>,
    /// What proved a success: written into the history row's evidence (`confirmed`) of a
    /// move to `succeeded`, which the database refuses without it (0069_evidence.sql).
    pub confirmation: Option<Confirmation>,
}

impl<'a> Transition<'a> {
    pub fn new(op: OpRef<'a>, expected: Status, fence: i64, event: Event, actor: &'a str) -> Self {
        Transition {
            op,
            expected,
            fence,
            event,
            actor,
            reason: None,
            evidence: None,
            external_id: None,
            provider_request_id: None,
            result: None,
            error_code: None,
            deadline_s: None,
            escalate: false,
            approval_status: None,
            decided_by: None,
            signed_in_with: None,
            confirmation: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum TransitionOutcome {
    Moved {
        to: Status,
        /// approved → final, when the row became final after an approval.
        approved_to_final_s: Option<f64>,
        /// unknown_since → final, when the row was ever unknown.
        unknown_to_final_s: Option<f64>,
    },
    /// The state machine refuses the event from the expected status; nothing was written.
    Refused(Refused),
    /// The row is no longer in the expected status or fence: someone else moved it.
    Stale,
}

/// The compare-and-set's condition on the row (written as every CAS is, see `rows.rs`):
/// the row of operation `$1` of tenant `$19` still in the expected status `$2` and fence
/// `$4`, and not escalated unless `$17` lets a person's decision move an escalated row.
macro_rules! move_where {
    () => {
        "operation_id = $1 AND tenant_id = $19 AND status = $2 AND fence = $4
      AND (NOT $17 OR escalated_at IS NULL)"
    };
}

/// A worker records no decision: `$14` and `$15` are named (always NULL there) so that a
/// worker's statement keeps the parameter list of a decision's.
macro_rules! worker_guard {
    () => {
        "\n      AND $14::text IS NULL AND $15::text IS NULL"
    };
}

/// The compare-and-set (see `move_where`) and its event row: `$2`,
/// the expected status, is a parameter like every other status value. `$20` says whether
/// the target is final (`Status::is_final`, bound by [`bind`]), so the statement keeps no
/// list of final statuses of its own: the time a row became final is stamped by core's. `$decided` is the
/// part that records a person's decision in the approval columns, which only the API's
/// database role may update: a worker's statement names none of them, so it needs no
/// privilege on them (and holds none); `$guard` then names `$14` and `$15`.
///
/// The six-part form is the same move over many rows ([`UPDATE_WITH_ATTEMPT_MANY`]):
/// `$head` opens the statement up to the move's CTE, `$from` joins the rows of values,
/// `$returning` adds to what each moved row returns and `$event_from` is where the
/// event rows are read from.
macro_rules! move_and_event {
    ($decided:literal, $guard:expr) => {
        move_and_event!($decided, $guard, "WITH moved AS (", "", "", "FROM moved")
    };
    ($decided:literal, $guard:expr, $head:expr, $from:literal, $returning:literal, $event_from:literal) => {
        concat!("
", $head, "
    UPDATE operations SET
        status = $3,
        status_reason = $6,
        external_id = COALESCE($8, external_id),
        provider_request_id = COALESCE($9, provider_request_id),
        result = COALESCE($10, result),
        error_code = COALESCE($11, error_code),
        deadline_at = CASE WHEN $12::float8 IS NULL THEN deadline_at ELSE now() + make_interval(secs => $12) END,
        unknown_since = CASE WHEN $3 = 'unknown' THEN COALESCE(unknown_since, now()) ELSE unknown_since END,
        escalated_at = CASE WHEN $13 THEN COALESCE(escalated_at, now()) ELSE escalated_at END,
        resolved_at = CASE WHEN $20::bool THEN now() ELSE resolved_at END,
        lease_owner = CASE WHEN $3 = 'in_progress' THEN lease_owner END,
        lease_expires_at = CASE WHEN $3 = 'in_progress' THEN lease_expires_at END,", $decided, "
        updated_at = now()", $from, "
    WHERE ", move_where!(), $guard, "
    RETURNING operation_id, tenant_id, fence,
        EXTRACT(EPOCH FROM (resolved_at - decided_at))::float8 AS approved_to_final_s,
        EXTRACT(EPOCH FROM (resolved_at - unknown_since))::float8 AS unknown_to_final_s", $returning, "
), event AS (
    INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor, reason, evidence, signed_in_with)
    SELECT operation_id, tenant_id, $16, $2, $3, fence, $5, $6, $7, $18 ", $event_from, "
)")
    };
}

/// A worker's move: no decision, so no approval column.
macro_rules! worker_move {
    () => {
        move_and_event!("", worker_guard!())
    };
}

/// The attempt row of (operation `$1` of tenant `$19`, fence `$4`) completed with
/// `$21`–`$27`, whether or not the row moves; `$from` joins the rows of values of the
/// many-row form.
macro_rules! attempt_update {
    ($from:literal) => {
        concat!(", attempt AS (
    UPDATE attempts SET finished_at = now(), outcome = $21, http_status = $22, replayed = $23, external_id = $24,
        provider_request_id = $25, response = $26, detail = $27", $from, "
    WHERE operation_id = $1 AND tenant_id = $19 AND fence = $4
)")
    };
}

pub(crate) const UPDATE: &str = concat!(worker_move!(), "\nSELECT * FROM moved");

/// A move that records a person's decision (a rejection cancels and says who decided).
pub(crate) const UPDATE_DECIDED: &str = concat!(
    move_and_event!(
        "
        approval_status = COALESCE($14, approval_status),
        decided_by = COALESCE($15, decided_by),
        decided_at = CASE WHEN $14::text IS NULL THEN decided_at ELSE now() END,",
        ""
    ),
    "\nSELECT * FROM moved"
);

/// [`UPDATE`] and the attempt row of (operation `$1` of tenant `$19`, fence `$4`) completed with `$21`–`$27`,
/// in one statement: the attempt is written whether or not the row moves. Attempts are a
/// worker's: no decision is recorded with one.
pub(crate) const UPDATE_WITH_ATTEMPT: &str =
    concat!(worker_move!(), attempt_update!(""), "\nSELECT * FROM moved");

/// The SQL type of each of [`UPDATE_WITH_ATTEMPT`]'s parameters, in order (the types
/// Postgres infers for them there): [`UPDATE_WITH_ATTEMPT_MANY`] takes an array of each.
pub(crate) const UPDATE_WITH_ATTEMPT_TYPES: [&str; 27] = [
    "text", "text", "text", "int8", "text", "text", "jsonb", "text", "text", "jsonb", "text",
    "float8", "bool", "text", "text", "text", "bool", "text", "text", "bool", "text", "int4",
    "bool", "text", "text", "jsonb", "text",
];

/// [`UPDATE_WITH_ATTEMPT`] over many answers in one statement: `$k` is the array of the
/// `$k`s of [`update_with_attempt_params`] (one element per answer, see
/// [`attempt_only_params`] for an answer the state machine refused), and the statement is
/// the single one's text with each `$k` read from the answer's row of values `i`, as
/// `i.pk`. So the move, its guard, the event and the attempt are the same text in both.
///
/// Each answer's row moves by its own compare-and-set. The rows that will move are
/// locked first, in the order the answers were given (`n`, their ordinality; the caller
/// sorts them by tenant and operation id), so two such statements never wait on each
/// other in a cycle (a batch's second statement, for an operation answered twice, may:
/// see `transition_many`); the move then updates exactly those rows. The event rows are written
/// in the same order. An answer whose `$3` (the target) is NULL was refused by the state
/// machine and moves nothing; every answer's attempt is completed. Each moved row is
/// returned with `n`. The operations of one statement are distinct.
pub(crate) static UPDATE_WITH_ATTEMPT_MANY: LazyLock<String> = LazyLock::new(|| {
    let each = concat!(
        move_and_event!(
            "",
            worker_guard!(),
            concat!(
                "locked AS (
    SELECT i.* FROM i, operations
    WHERE $3 IS NOT NULL AND ",
                move_where!(),
                worker_guard!(),
                "
    ORDER BY i.n
    FOR NO KEY UPDATE OF operations
), moved AS ("
            ),
            "
    FROM locked i",
            ",
        i.n",
            "FROM moved JOIN i USING (n)
    ORDER BY n"
        ),
        attempt_update!(
            "
    FROM i"
        ),
        "\nSELECT * FROM moved"
    );
    format!(
        "WITH {},{}",
        rows_of_values(&UPDATE_WITH_ATTEMPT_TYPES),
        of_each_row(each)
    )
});

pub(crate) const RECORD_ATTEMPT: &str = "
UPDATE attempts SET finished_at = now(), outcome = $3, http_status = $4, replayed = $5, external_id = $6,
    provider_request_id = $7, response = $8, detail = $9
WHERE operation_id = $1 AND fence = $2 AND tenant_id = $10";

impl<R: MoveOperations> StoreAs<R> {
    /// Applies `t` if the state machine allows it and the row still has the expected
    /// status and fence, in its own transaction. When `attempt` is given, the attempt row
    /// of (operation, fence) is completed in the same transaction, whether or not the row
    /// moves: a worker that lost its lease still records what the provider told it.
    pub async fn transition(
        &self,
        t: Transition<'_>,
        attempt: Option<&AttemptRecord>,
    ) -> Result<TransitionOutcome, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let from = t.expected;
        let outcome = transition_in(&tx, t, attempt).await?;
        tx.commit().await?;
        outcome.observe(from);
        Ok(outcome)
    }
}

impl<R: ClaimAndCall> StoreAs<R> {
    /// Completes the attempt row of (operation, fence) on its own.
    pub async fn record_attempt(
        &self,
        op: OpRef<'_>,
        fence: i64,
        a: &AttemptRecord,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let record = client.prepare_cached(RECORD_ATTEMPT).await?;
        let outcome = a.outcome.as_str();
        client
            .execute(&record, &attempt_params(&op, &fence, &outcome, a))
            .await?;
        Ok(())
    }
}

/// [`Store::transition`] inside the caller's transaction, for writes that must commit
/// together with the move (a webhook's dedup row, a sweeper's batch, a lookup). The caller
/// calls [`TransitionOutcome::observe`] after its commit.
pub(crate) async fn transition_in(
    tx: &Transaction<'_>,
    t: Transition<'_>,
    attempt: Option<&AttemptRecord>,
) -> Result<TransitionOutcome, StoreError> {
    let (to, bound) = match bind(&t) {
        Ok(bound) => bound,
        Err(refused) => {
            if let Some(a) = attempt {
                let outcome = a.outcome.as_str();
                tx.execute(
                    RECORD_ATTEMPT,
                    &attempt_params(&t.op, &t.fence, &outcome, a),
                )
                .await?;
            }
            return Ok(TransitionOutcome::Refused(refused));
        }
    };
    let moved = match attempt {
        Some(a) => {
            let update = tx.prepare_cached(UPDATE_WITH_ATTEMPT).await?;
            let outcome = a.outcome.as_str();
            tx.query_opt(
                &update,
                &update_with_attempt_params(&t, &bound, &outcome, a),
            )
            .await?
        }
        None => {
            let decides = t.approval_status.is_some() || t.decided_by.is_some();
            let update = tx
                .prepare_cached(if decides { UPDATE_DECIDED } else { UPDATE })
                .await?;
            tx.query_opt(&update, &update_params(&t, &bound)).await?
        }
    };
    Ok(outcome_of(to, moved.as_ref()))
}

/// The values [`UPDATE`] binds besides the transition's own fields.
pub(crate) struct Bound {
    expected: &'static str,
    to: &'static str,
    /// Whether `to` is final: the move stamps `resolved_at`.
    ends: bool,
    kind: &'static str,
    /// Escalated means hands off: only a person's decision moves such a row.
    unescalated_only: bool,
    /// The approval status `t` sets, by name.
    approval_status: Option<&'static str>,
    /// `t`'s reason, by name.
    reason: Option<&'static str>,
    /// `t`'s evidence, with its confirmation for a move to `succeeded`.
    evidence: Option<Value>,
}

/// The target status the state machine gives `t`, with the values bound beside it, or
/// its refusal (then nothing but the attempt may be written).
pub(crate) fn bind(t: &Transition<'_>) -> Result<(Status, Bound), Refused> {
    let to = transition(t.expected, t.event)?;
    let kind = match t.event {
        Event::Escalate => "escalated",
        _ => "transition",
    };
    Ok((
        to,
        Bound {
            expected: t.expected.as_str(),
            to: to.as_str(),
            ends: to.is_final(),
            kind,
            unescalated_only: !t.event.is_operator_decision(),
            approval_status: t.approval_status.map(ApprovalStatus::as_str),
            reason: t.reason.map(Reason::as_str),
            evidence: match (&t.confirmation, to) {
                (Some(c), Status::Succeeded) => Some(c.into_evidence(t.evidence.clone())),
                _ => t.evidence.clone(),
            },
        },
    ))
}

pub(crate) fn update_params<'p>(t: &'p Transition<'_>, b: &'p Bound) -> [Param<'p>; 20] {
    [
        &t.op.operation_id,
        &b.expected,
        &b.to,
        &t.fence,
        &t.actor,
        &b.reason,
        &b.evidence,
        &t.external_id,
        &t.provider_request_id,
        &t.result,
        &t.error_code,
        &t.deadline_s,
        &t.escalate,
        &b.approval_status,
        &t.decided_by,
        &b.kind,
        &b.unescalated_only,
        &t.signed_in_with,
        &t.op.tenant_id,
        &b.ends,
    ]
}

/// [`update_params`] followed by the attempt's columns, for [`UPDATE_WITH_ATTEMPT`].
pub(crate) fn update_with_attempt_params<'p>(
    t: &'p Transition<'_>,
    b: &'p Bound,
    outcome: &'p &'static str,
    a: &'p AttemptRecord,
) -> [Param<'p>; 27] {
    let [p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p20] =
        update_params(t, b);
    let [_, _, a1, a2, a3, a4, a5, a6, a7, _] = attempt_params(&t.op, &t.fence, outcome, a);
    [
        p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p20,
        a1, a2, a3, a4, a5, a6, a7,
    ]
}

/// NULL of any type: a value [`attempt_only_params`] does not bind.
#[derive(Debug)]
pub(crate) struct Null;

pub(crate) static NULL: Null = Null;

impl ToSql for Null {
    fn to_sql(&self, _: &Type, _: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        Ok(IsNull::Yes)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// [`update_with_attempt_params`] for a transition the state machine refused, for
/// [`UPDATE_WITH_ATTEMPT_MANY`]: the operation, the fence and the attempt's columns, and
/// NULL for every value of the move (so the row does not move; its attempt is completed).
pub(crate) fn attempt_only_params<'p>(
    t: &'p Transition<'_>,
    outcome: &'p &'static str,
    a: &'p AttemptRecord,
) -> [Param<'p>; 27] {
    let [op, fence, a1, a2, a3, a4, a5, a6, a7, tenant] =
        attempt_params(&t.op, &t.fence, outcome, a);
    let null: Param<'p> = &NULL;
    [
        op, null, null, fence, null, null, null, null, null, null, null, null, null, null, null,
        null, null, null, tenant, null, a1, a2, a3, a4, a5, a6, a7,
    ]
}

/// What [`UPDATE`]'s answer says: the row it returned moved to `to`; none is stale.
pub(crate) fn outcome_of(to: Status, moved: Option<&tokio_postgres::Row>) -> TransitionOutcome {
    match moved {
        Some(row) => TransitionOutcome::Moved {
            to,
            approved_to_final_s: row.get("approved_to_final_s"),
            unknown_to_final_s: row.get("unknown_to_final_s"),
        },
        None => TransitionOutcome::Stale,
    }
}

impl TransitionOutcome {
    /// Counts a committed move (no-op for `Stale` and `Refused`). Call after the commit.
    pub fn observe(&self, from: Status) {
        if let TransitionOutcome::Moved {
            to,
            approved_to_final_s,
            unknown_to_final_s,
        } = self
        {
            observe(from, *to, *approved_to_final_s, *unknown_to_final_s);
        }
    }
}

/// Every committed transition is counted here, once, whoever made it.
pub(crate) fn observe(
    from: Status,
    to: Status,
    approved_to_final_s: Option<f64>,
    unknown_to_final_s: Option<f64>,
) {
    metrics::counter!(m::TRANSITIONS_TOTAL, "from" => from.as_str(), "to" => to.as_str())
        .increment(1);
    // A final row confirmed again by an operator was timed when it first became final.
    if !to.is_final() || from.is_final() {
        return;
    }
    if let Some(s) = approved_to_final_s {
        metrics::histogram!(m::END_TO_END_SECONDS, "to" => to.as_str()).record(s);
    }
    if let Some(s) = unknown_to_final_s {
        metrics::histogram!(m::TIME_TO_RECONCILIATION_SECONDS, "to" => to.as_str()).record(s);
    }
}

/// The attempt's columns ([`RECORD_ATTEMPT`]'s parameters); `outcome` is `a.outcome`'s
/// name (bound as text), kept alive by the caller for as long as the statement.
pub(crate) fn attempt_params<'a>(
    op: &'a OpRef<'a>,
    fence: &'a i64,
    outcome: &'a &'static str,
    a: &'a AttemptRecord,
) -> [Param<'a>; 10] {
    [
        &op.operation_id,
        fence,
        outcome,
        &a.http_status,
        &a.replayed,
        &a.external_id,
        &a.provider_request_id,
        &a.response,
        &a.detail,
        &op.tenant_id,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_many_row_statement_binds_only_its_arrays() {
        let many: &str = &UPDATE_WITH_ATTEMPT_MANY;
        let (arrays, rest) = many.split_once("WITH ORDINALITY").unwrap();
        for k in 1..=UPDATE_WITH_ATTEMPT_TYPES.len() {
            assert!(arrays.contains(&format!("${k}::")), "${k}");
        }
        assert!(!rest.contains('$'), "{rest}");
        // Every value the one-row statement binds is read in the many-row one.
        for k in 1..=UPDATE_WITH_ATTEMPT_TYPES.len() {
            if UPDATE_WITH_ATTEMPT.contains(&format!("${k}")) {
                assert!(rest.contains(&format!("i.p{k}")), "i.p{k}");
            }
        }
    }
}
