//! Reconcile's step, free of I/O: what to do with a row it was asked to look at
//! ([`next_step`]), and where what it learned moves the row ([`found_move`] for what a
//! provider object proves, [`past_deadline_move`] for an accepted row past its deadline,
//! and the moves [`settle`](super::settle) names). The worker reads the row, asks the
//! provider, asks here, and has the store apply the move.

use super::{Found, Lookup};
use crate::{Event, Reason, Status};

/// What reconcile reads of a row to know whether, and how, it needs reconciling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowDue {
    pub status: Status,
    /// The lease of the worker holding an `in_progress` row ran out.
    pub lease_expired: bool,
    /// An `accepted` row waited past its deadline for a final answer.
    pub deadline_passed: bool,
    /// A person was asked to decide: hands off.
    pub escalated: bool,
}

/// What reconcile does with a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The call's outcome is unknown now: move the row with [`lease_expired_move`], then
    /// settle it as an unknown row.
    ExpireLease,
    /// Look the accepted row up and move it with [`past_deadline_move`].
    SettleAccepted,
    /// Settle the unknown row from its attempts or a lookup ([`settle`](super::settle)).
    SettleUnknown,
    /// Nothing to reconcile: still in its holder's hands, not yet due, final, or a person's.
    LeaveAlone,
}

impl RowDue {
    /// A signed provider event that arrived before anything could link it is the cheapest
    /// evidence there is: it is applied before the provider is asked, for a row that
    /// waits for one (accepted or unknown).
    pub fn applies_unlinked_webhooks_first(self) -> bool {
        matches!(self.status, Status::Accepted | Status::Unknown)
    }
}

/// The step for `row`. Exhaustive on the status on purpose: a new status must be decided
/// here, not fall through a wildcard.
pub fn next_step(row: RowDue) -> Step {
    match row.status {
        Status::InProgress if row.lease_expired => Step::ExpireLease,
        Status::Accepted if row.deadline_passed => Step::SettleAccepted,
        Status::Unknown if !row.escalated => Step::SettleUnknown,
        Status::InProgress | Status::Accepted | Status::Unknown => Step::LeaveAlone,
        Status::NotStarted
        | Status::Succeeded
        | Status::Failed
        | Status::Cancelled
        | Status::Disputed => Step::LeaveAlone,
    }
}

/// One fenced move of reconcile, as plain values: the worker turns it into the store's
/// transition, at the fence it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupMove<'a> {
    /// The status the row must still be in.
    pub from: Status,
    pub event: Event,
    pub reason: Reason,
    pub error_code: Option<&'a str>,
    pub external_id: Option<&'a str>,
    /// A pending effect: the row waits this many seconds for a final answer.
    pub deadline_s: Option<u32>,
    /// A person decides: the row stays with an open escalation.
    pub escalate: bool,
    /// The move is what the lookup behind it proved: the lookup is recorded with the move,
    /// in one transaction, so the history always shows it. A lease or a deadline that ran
    /// out is no lookup's verdict: that move stands alone.
    pub records_lookup: bool,
}

/// A move with nothing but its reason, recorded with its lookup.
fn plain<'a>(from: Status, event: Event, reason: Reason) -> LookupMove<'a> {
    LookupMove {
        from,
        event,
        reason,
        error_code: None,
        external_id: None,
        deadline_s: None,
        escalate: false,
        records_lookup: true,
    }
}

/// The move that settles a row in `from` with what one provider object (or an attempt's
/// final answer) proves; a pending effect waits `accepted_deadline_s` more.
pub fn found_move(found: &Found, from: Status, accepted_deadline_s: u32) -> LookupMove<'_> {
    let base = plain(from, Event::LookupSucceeded, Reason::Reconciled);
    match found {
        Found::Succeeded { external_id } => LookupMove {
            external_id: Some(external_id),
            ..base
        },
        Found::Failed { external_id, code } => LookupMove {
            event: Event::LookupFailed,
            external_id: Some(external_id),
            error_code: Some(code),
            ..base
        },
        Found::Pending { external_id } => LookupMove {
            event: Event::LookupAccepted,
            external_id: Some(external_id),
            deadline_s: Some(accepted_deadline_s),
            ..base
        },
    }
}

/// An accepted row past its deadline: exactly one object with a final answer settles it;
/// anything else (still pending, nothing found, several, a failed lookup) makes it
/// unknown, and reconcile then keeps asking or escalates.
pub fn past_deadline_move(lookup: &Lookup, accepted_deadline_s: u32) -> LookupMove<'_> {
    if let Lookup::Matches(found) = lookup {
        if let [found @ (Found::Succeeded { .. } | Found::Failed { .. })] = found.as_slice() {
            return found_move(found, Status::Accepted, accepted_deadline_s);
        }
    }
    LookupMove {
        records_lookup: false,
        ..plain(
            Status::Accepted,
            Event::DeadlinePassed,
            Reason::DeadlinePassed,
        )
    }
}

/// The holder of an `in_progress` row lost its lease during the call: the outcome is
/// unknown.
pub fn lease_expired_move() -> LookupMove<'static> {
    LookupMove {
        records_lookup: false,
        ..plain(
            Status::InProgress,
            Event::LeaseExpired,
            Reason::LeaseExpired,
        )
    }
}

/// What the attempt of a lost claim says about its request: its durable send mark
/// (`attempts.request_sent`, written and committed before the request goes out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMark {
    /// The mark still says nothing was sent: the one proof of absence.
    NotSent,
    /// The mark was written (the request may have left), or the attempt keeps no mark.
    MaybeSent,
}

/// The move for an `in_progress` row whose holder lost its claim: released back to
/// `not_started` (the same request may go again, no lookup needed) only when the
/// attempt's mark proves nothing was sent; otherwise [`lease_expired_move`], `unknown`.
/// When in doubt it is unknown, never a blind retry.
pub fn lost_claim_move(mark: SendMark) -> LookupMove<'static> {
    match mark {
        SendMark::NotSent => LookupMove {
            records_lookup: false,
            ..plain(
                Status::InProgress,
                Event::ProviderNotSent,
                Reason::ClaimLostBeforeSend,
            )
        },
        SendMark::MaybeSent => lease_expired_move(),
    }
}

/// Absence proven and a same-key retry safe: the unknown row goes back to not_started
/// (and execute is rung).
pub fn absent_move() -> LookupMove<'static> {
    plain(
        Status::Unknown,
        Event::LookupAbsent,
        Reason::LookupProvedAbsence,
    )
}

/// A person decides: the unknown row stays unknown, escalated, with `reason`.
pub fn escalate_move(reason: Reason) -> LookupMove<'static> {
    LookupMove {
        escalate: true,
        ..plain(Status::Unknown, Event::Escalate, reason)
    }
}

#[cfg(test)]
mod tests;
