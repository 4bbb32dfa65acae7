//! What becomes of a person's rejection of an operation: judged here, applied by the
//! store (`fleet_store`'s reject, which moves the row by [`crate::transition`] with the
//! event [`Event::CancelBeforeStart`] and the approval status `rejected`), guarded again
//! by the database (the state table's moves, the approval status's moves, and a trigger
//! that makes `rejected` only with the cancellation of the rows this rejects). The
//! `rule_tables` test in `tests/fleet-tests` runs every (status, approval status,
//! escalation) through the store and the database and through [`judge_reject`] and
//! asserts the same answer and the same resulting row.

use crate::{transition, ApprovalStatus, Event, Status};

/// What the store saw of the operation when a person asked to reject it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejectAsked {
    pub approval: ApprovalStatus,
    pub status: Status,
    /// An escalation is open: only an operator's decision moves the row.
    pub escalated: bool,
}

/// What to do with one rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectVerdict {
    /// Cancel it and record the rejection: [`REJECTED`] is where the row goes.
    Reject,
    /// Rejected before (by anyone): nothing changes.
    AlreadyRejected,
    /// Nobody decided within the window: there is nothing left to reject, and the
    /// approval status stays `expired` (the database allows no move from it).
    Expired,
    /// Execution began, the operation is final, or it waits for an operator (escalated):
    /// too late for an approver to reject.
    TooLate,
}

/// The (status, approval status) a rejected operation has.
pub const REJECTED: (Status, ApprovalStatus) = (Status::Cancelled, ApprovalStatus::Rejected);

/// The fate of one rejection, in this order: a rejected operation stays as it is; one
/// that started (or is final) is out of an approver's hands, and so is an escalated one
/// (a person's cancellation of it is an operator's decision); an expired approval is not
/// rejected after the fact; a pending or approved one that has not started is cancelled.
pub fn judge_reject(a: RejectAsked) -> RejectVerdict {
    match (a.approval, a.status) {
        (ApprovalStatus::Rejected, _) => RejectVerdict::AlreadyRejected,
        (_, status) if transition(status, Event::CancelBeforeStart).is_err() => {
            RejectVerdict::TooLate
        }
        _ if a.escalated => RejectVerdict::TooLate,
        (ApprovalStatus::Expired, _) => RejectVerdict::Expired,
        (ApprovalStatus::Pending | ApprovalStatus::Approved, _) => RejectVerdict::Reject,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_question() -> impl Iterator<Item = RejectAsked> {
        ApprovalStatus::ALL.into_iter().flat_map(|approval| {
            Status::ALL.into_iter().flat_map(move |status| {
                [false, true].map(move |escalated| RejectAsked {
                    approval,
                    status,
                    escalated,
                })
            })
        })
    }

    #[test]
    fn only_an_unstarted_unescalated_pending_or_approved_operation_is_rejected() {
        for a in every_question() {
            let rejects = a.status == Status::NotStarted
                && !a.escalated
                && matches!(
                    a.approval,
                    ApprovalStatus::Pending | ApprovalStatus::Approved
                );
            assert_eq!(judge_reject(a) == RejectVerdict::Reject, rejects, "{a:?}");
            if rejects {
                assert_eq!(
                    transition(a.status, Event::CancelBeforeStart),
                    Ok(REJECTED.0)
                );
            }
        }
    }

    #[test]
    fn a_rejection_is_answered_the_same_way_again_and_an_expiry_is_never_overwritten() {
        for a in every_question() {
            let verdict = judge_reject(a);
            if a.approval == ApprovalStatus::Rejected {
                assert_eq!(verdict, RejectVerdict::AlreadyRejected, "{a:?}");
            }
            if a.approval == ApprovalStatus::Expired {
                assert_ne!(verdict, RejectVerdict::Reject, "{a:?}");
            }
            if a.status != Status::NotStarted && a.approval != ApprovalStatus::Rejected {
                assert_eq!(verdict, RejectVerdict::TooLate, "{a:?}");
            }
        }
    }
}
