//! The history of an operation (`operation_events`) and which of its rows agents hear
//! about: the one mapping from a history row to a published event type.
//!
//! The database's outbox trigger applies the mapping where the row is written (so an
//! event is in the same commit as its change, whichever component wrote it); its SQL
//! function `outcome_event_type` must say what [`EventType::of`] says, and a test walks
//! every combination of kind, status, actor and reason against it
//! (`tests/fleet-tests`, the schema tests). Change one, and the test names the other.

use crate::by_name::{display_by_name, serialize_by_name};
use crate::events::EventType;
use crate::reason::Reason;
use crate::state::Status;

/// What a history row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HistoryKind {
    /// The intake stored the snapshot.
    Prepared,
    /// One approval of a quorum that is still short.
    ApprovalRecorded,
    /// The approval that completed the quorum.
    Approved,
    /// An approver stopped being a live approver of the tenant (removed, another role, the
    /// tenant withdrawn): their approval is void, and an operation it had approved that
    /// no longer has its quorum is pending again.
    ApprovalVoided,
    /// An approval came after its window closed (or the window closed unapproved).
    ApprovalExpired,
    /// A status change (`from_status` → `to_status`).
    Transition,
    /// Handed to a person.
    Escalated,
    /// A provider's event contradicted the row.
    WebhookConflict,
    /// Reconcile looked the operation up at the provider (no change).
    Lookup,
    /// The post-settlement audit found the provider agreeing.
    Audited,
}

impl HistoryKind {
    pub const ALL: [HistoryKind; 10] = [
        HistoryKind::Prepared,
        HistoryKind::ApprovalRecorded,
        HistoryKind::Approved,
        HistoryKind::ApprovalVoided,
        HistoryKind::ApprovalExpired,
        HistoryKind::Transition,
        HistoryKind::Escalated,
        HistoryKind::WebhookConflict,
        HistoryKind::Lookup,
        HistoryKind::Audited,
    ];

    /// As stored in `operation_events.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryKind::Prepared => "prepared",
            HistoryKind::ApprovalRecorded => "approval_recorded",
            HistoryKind::Approved => "approved",
            HistoryKind::ApprovalVoided => "approval_voided",
            HistoryKind::ApprovalExpired => "approval_expired",
            HistoryKind::Transition => "transition",
            HistoryKind::Escalated => "escalated",
            HistoryKind::WebhookConflict => "webhook_conflict",
            HistoryKind::Lookup => "lookup",
            HistoryKind::Audited => "audited",
        }
    }

    pub fn parse(s: &str) -> Option<HistoryKind> {
        HistoryKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

serialize_by_name!(HistoryKind);
display_by_name!(HistoryKind);

/// Who wrote a history row, as the mapping tells them apart: an operator (`operator:<name>`)
/// settles or disputes; anyone else's transition is the workers'.
pub fn by_operator(actor: &str) -> bool {
    actor.starts_with("operator:")
}

impl EventType {
    /// The event a history row publishes, if any: `kind`, the status it moved to, who
    /// wrote it and why. An `unknown` row whose operation is already escalated publishes
    /// [`EventType::Escalated`] instead (see [`EventType::on_escalated_row`]).
    ///
    /// The reasons read here are the ones that name an event: a cancellation's says which
    /// one, and a webhook conflict on a row a person already holds is only noted.
    pub fn of(
        kind: HistoryKind,
        to_status: Option<Status>,
        actor: &str,
        reason: Option<Reason>,
    ) -> Option<EventType> {
        Some(match kind {
            HistoryKind::Prepared => EventType::Prepared,
            HistoryKind::ApprovalRecorded => EventType::ApprovalRecorded,
            HistoryKind::Approved => EventType::Approved,
            HistoryKind::ApprovalVoided => EventType::ApprovalVoided,
            HistoryKind::ApprovalExpired => EventType::ApprovalExpired,
            HistoryKind::Escalated => EventType::Escalated,
            HistoryKind::WebhookConflict => match reason {
                Some(Reason::WebhookOnDisputed | Reason::OperationEscalated) => return None,
                _ => EventType::Escalated,
            },
            HistoryKind::Lookup | HistoryKind::Audited => return None,
            HistoryKind::Transition if by_operator(actor) => match to_status {
                Some(Status::Disputed) => EventType::Disputed,
                _ => EventType::Resolved,
            },
            HistoryKind::Transition => match to_status? {
                Status::InProgress => EventType::Executing,
                Status::NotStarted => EventType::Requeued,
                Status::Accepted => EventType::Accepted,
                Status::Unknown => EventType::Unknown,
                Status::Succeeded => EventType::Succeeded,
                Status::Failed => EventType::Failed,
                Status::Disputed => EventType::Disputed,
                Status::Cancelled => match reason {
                    Some(Reason::ApprovalRejected) => EventType::Rejected,
                    Some(Reason::ApprovalExpired) => EventType::ApprovalExpired,
                    Some(Reason::Superseded) => EventType::Superseded,
                    _ => EventType::Cancelled,
                },
            },
        })
    }

    /// The event as published for an operation a person already holds: an `unknown` on an
    /// escalated row is the escalation agents must see, not a new uncertainty.
    pub fn on_escalated_row(self, escalated: bool) -> EventType {
        match self {
            EventType::Unknown if escalated => EventType::Escalated,
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_its_stored_name() {
        for kind in HistoryKind::ALL {
            assert_eq!(HistoryKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(HistoryKind::parse("Transition"), None);
    }

    #[test]
    fn a_cancellation_is_named_by_its_reason_and_an_operator_settles() {
        let cancelled = |reason| {
            EventType::of(
                HistoryKind::Transition,
                Some(Status::Cancelled),
                "execute",
                reason,
            )
        };
        assert_eq!(
            cancelled(Some(Reason::ApprovalRejected)),
            Some(EventType::Rejected)
        );
        assert_eq!(
            cancelled(Some(Reason::Superseded)),
            Some(EventType::Superseded)
        );
        assert_eq!(
            cancelled(Some(Reason::PolicyOutdated)),
            Some(EventType::Cancelled)
        );
        assert_eq!(cancelled(None), Some(EventType::Cancelled));
        assert_eq!(
            EventType::of(
                HistoryKind::Transition,
                Some(Status::Cancelled),
                "operator:ops",
                Some(Reason::Superseded)
            ),
            Some(EventType::Resolved)
        );
        assert_eq!(
            EventType::of(
                HistoryKind::Lookup,
                Some(Status::Unknown),
                "reconcile",
                None
            ),
            None
        );
        assert_eq!(
            EventType::Unknown.on_escalated_row(true),
            EventType::Escalated
        );
        assert_eq!(
            EventType::Succeeded.on_escalated_row(true),
            EventType::Succeeded
        );
    }
}
