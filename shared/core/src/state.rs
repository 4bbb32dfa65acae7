//! The operation state machine (docs/design.md#the-operation-state-table): one pure function over
//! an exhaustive match. No `_` arm over a status or an event, so adding either fails to
//! compile until every transition is decided.

use crate::by_name::{display_by_name, serialize_by_name};

mod moves;
pub use moves::{status_moves, StatusMove};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Prepared; waiting for approval or for an execute worker to claim it.
    NotStarted,
    /// Claimed under a live lease; at most one provider call is in flight.
    InProgress,
    /// The provider accepted asynchronously; the final answer follows by webhook or lookup.
    Accepted,
    /// The effect may or may not exist; only reconcile or an operator settles it.
    Unknown,
    Succeeded,
    Failed,
    Cancelled,
    /// An operator took the row out of the workers' hands for investigation.
    Disputed,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::NotStarted,
        Status::InProgress,
        Status::Accepted,
        Status::Unknown,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
        Status::Disputed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::NotStarted => "not_started",
            Status::InProgress => "in_progress",
            Status::Accepted => "accepted",
            Status::Unknown => "unknown",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Disputed => "disputed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Final for workers: nothing automatic moves the row again.
    pub fn is_final(self) -> bool {
        match self {
            Status::Succeeded | Status::Failed | Status::Cancelled | Status::Disputed => true,
            Status::NotStarted | Status::InProgress | Status::Accepted | Status::Unknown => false,
        }
    }

    /// A final outcome: no status is ever written over it, by anyone (no move of the
    /// state table starts here, and the database refuses every change of it, the owner's
    /// included). `disputed` is final for workers only: an operator's finding ends it.
    pub fn is_final_outcome(self) -> bool {
        match self {
            Status::Succeeded | Status::Failed | Status::Cancelled => true,
            Status::NotStarted
            | Status::InProgress
            | Status::Accepted
            | Status::Unknown
            | Status::Disputed => false,
        }
    }
}

display_by_name!(Status);

serialize_by_name!(Status);

/// Something that happened to an operation, named after who saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// execute: approval valid, lease claimed, fence + 1.
    Claim,
    /// execute / reconcile / approver: approval expired or rejected, hash or policy mismatch.
    CancelBeforeStart,
    /// execute (fenced): definitive answers of the one provider call.
    ProviderSucceeded,
    ProviderFailed,
    ProviderAccepted,
    ProviderAmbiguous,
    /// execute (fenced): a conditional update met another version; the approved change
    /// no longer applies, so the operation is cancelled for a new decision.
    ProviderConflict,
    /// execute (fenced): the request provably never reached the provider (connection
    /// refused), so the row goes back to wait for another attempt with the same key.
    /// Also reconcile, for a claim lost before its request was sent (the attempt's send
    /// mark proves it).
    ProviderNotSent,
    /// reconcile: the holder's lease expired while in progress.
    LeaseExpired,
    /// reconcile: an accepted row is past its deadline and the lookup was not definitive.
    DeadlinePassed,
    /// webhook-ingest: a signed final event for this operation.
    WebhookSucceeded,
    WebhookFailed,
    /// reconcile: what a lookup or local evidence proved.
    LookupSucceeded,
    LookupFailed,
    LookupAccepted,
    /// reconcile: a lookup proved absence and a same-key retry is safe.
    LookupAbsent,
    /// reconcile: ambiguous lookup; the row stays unknown with `escalated_at` set.
    Escalate,
    /// operator decisions, with evidence.
    OperatorSucceeded,
    OperatorFailed,
    OperatorCancelled,
    OperatorDispute,
}

impl Event {
    pub const ALL: [Event; 21] = [
        Event::Claim,
        Event::CancelBeforeStart,
        Event::ProviderSucceeded,
        Event::ProviderFailed,
        Event::ProviderAccepted,
        Event::ProviderAmbiguous,
        Event::ProviderConflict,
        Event::ProviderNotSent,
        Event::LeaseExpired,
        Event::DeadlinePassed,
        Event::WebhookSucceeded,
        Event::WebhookFailed,
        Event::LookupSucceeded,
        Event::LookupFailed,
        Event::LookupAccepted,
        Event::LookupAbsent,
        Event::Escalate,
        Event::OperatorSucceeded,
        Event::OperatorFailed,
        Event::OperatorCancelled,
        Event::OperatorDispute,
    ];
}

/// Named groups of events, written as patterns so that a match built from them stays
/// exhaustive: adding an event to a group decides it everywhere the group is refused.
///
/// Answers about an in-flight provider call (execute's, and reconcile's lease expiry):
/// they apply only while a call is in flight.
macro_rules! in_flight_answers {
    () => {
        Event::ProviderSucceeded
            | Event::ProviderFailed
            | Event::ProviderAccepted
            | Event::ProviderAmbiguous
            | Event::ProviderConflict
            | Event::ProviderNotSent
            | Event::LeaseExpired
    };
}

/// Execute's decisions before any call: take the row, or cancel it unsent.
macro_rules! start_decisions {
    () => {
        Event::Claim | Event::CancelBeforeStart
    };
}

/// A signed final event from the provider.
macro_rules! webhook_findings {
    () => {
        Event::WebhookSucceeded | Event::WebhookFailed
    };
}

/// What reconcile's lookup proved.
macro_rules! lookup_findings {
    () => {
        Event::LookupSucceeded | Event::LookupFailed | Event::LookupAccepted | Event::LookupAbsent
    };
}

/// An operator's finding of the outcome (a dispute is not a finding).
macro_rules! operator_findings {
    () => {
        Event::OperatorSucceeded | Event::OperatorFailed | Event::OperatorCancelled
    };
}

impl Event {
    /// Decisions a person makes. Only these may move a row that was escalated to a person;
    /// every worker's write leaves such a row alone.
    pub fn is_operator_decision(self) -> bool {
        match self {
            operator_findings!() | Event::OperatorDispute => true,
            start_decisions!()
            | in_flight_answers!()
            | Event::DeadlinePassed
            | webhook_findings!()
            | lookup_findings!()
            | Event::Escalate => false,
        }
    }
}

/// The event is not allowed from this status: the caller records it and changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{event:?} is not allowed from {from}")]
pub struct Refused {
    pub from: Status,
    pub event: Event,
}

/// The one transition function. `Ok(to)` when the table allows `event` from `from`.
pub fn transition(from: Status, event: Event) -> Result<Status, Refused> {
    use Event as E;
    use Status as S;
    let refused = Err(Refused { from, event });
    match (from, event) {
        (S::NotStarted, E::Claim) => Ok(S::InProgress),
        (S::NotStarted, E::CancelBeforeStart) => Ok(S::Cancelled),

        (S::InProgress, E::ProviderSucceeded) => Ok(S::Succeeded),
        (S::InProgress, E::ProviderFailed) => Ok(S::Failed),
        (S::InProgress, E::ProviderAccepted) => Ok(S::Accepted),
        (S::InProgress, E::ProviderAmbiguous | E::LeaseExpired) => Ok(S::Unknown),
        (S::InProgress, E::ProviderNotSent) => Ok(S::NotStarted),
        (S::InProgress, E::ProviderConflict) => Ok(S::Cancelled),
        (S::InProgress | S::Unknown | S::Accepted, E::WebhookSucceeded) => Ok(S::Succeeded),
        (S::InProgress | S::Unknown | S::Accepted, E::WebhookFailed) => Ok(S::Failed),

        (S::Accepted, E::LookupSucceeded) => Ok(S::Succeeded),
        (S::Accepted, E::LookupFailed) => Ok(S::Failed),
        (S::Accepted, E::DeadlinePassed) => Ok(S::Unknown),

        (S::Unknown, E::LookupSucceeded) => Ok(S::Succeeded),
        (S::Unknown, E::LookupFailed) => Ok(S::Failed),
        (S::Unknown, E::LookupAccepted) => Ok(S::Accepted),
        (S::Unknown, E::LookupAbsent) => Ok(S::NotStarted),
        (S::Unknown, E::Escalate) => Ok(S::Unknown),
        // A row that must not run as it is (its snapshot no longer matches its approval)
        // waits for a person where it is.
        (S::NotStarted, E::Escalate) => Ok(S::NotStarted),

        (S::Unknown | S::Accepted, E::OperatorSucceeded) => Ok(S::Succeeded),
        (S::Unknown | S::Accepted, E::OperatorFailed) => Ok(S::Failed),
        (S::Unknown | S::Accepted, E::OperatorCancelled) => Ok(S::Cancelled),
        (S::NotStarted | S::InProgress | S::Accepted | S::Unknown, E::OperatorDispute) => {
            Ok(S::Disputed)
        }
        // An investigation ends with the operator's finding, with evidence.
        (S::Disputed, E::OperatorSucceeded) => Ok(S::Succeeded),
        (S::Disputed, E::OperatorFailed) => Ok(S::Failed),
        (S::Disputed, E::OperatorCancelled) => Ok(S::Cancelled),
        // An operator confirms a settled effect that a later audit escalated (e.g. after
        // dealing with a duplicate the provider made): the escalation is closed.
        (S::Succeeded, E::OperatorSucceeded) => Ok(S::Succeeded),

        (
            S::NotStarted,
            in_flight_answers!()
            | E::DeadlinePassed
            | webhook_findings!()
            | lookup_findings!()
            | operator_findings!(),
        ) => refused,
        (
            S::InProgress,
            start_decisions!()
            | E::DeadlinePassed
            | lookup_findings!()
            | E::Escalate
            | operator_findings!(),
        ) => refused,
        (
            S::Accepted,
            start_decisions!()
            | in_flight_answers!()
            | E::LookupAccepted
            | E::LookupAbsent
            | E::Escalate,
        ) => refused,
        (S::Unknown, start_decisions!() | in_flight_answers!() | E::DeadlinePassed) => refused,
        // Final states, and a disputed operation until the operator's finding, absorb every
        // other event: a late answer is recorded and escalated, never applied.
        (S::Succeeded, E::OperatorFailed | E::OperatorCancelled) => refused,
        (
            S::Disputed | S::Succeeded | S::Failed | S::Cancelled,
            start_decisions!()
            | in_flight_answers!()
            | E::DeadlinePassed
            | webhook_findings!()
            | lookup_findings!()
            | E::Escalate
            | E::OperatorDispute,
        ) => refused,
        (S::Failed | S::Cancelled, operator_findings!()) => refused,
    }
}

#[cfg(test)]
mod tests;
