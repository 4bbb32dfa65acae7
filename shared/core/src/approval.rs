//! The approval side of an operation, as stored in `operations.approval_status`, and what
//! becomes of one approver's approval.

use crate::by_name::{display_by_name, serialize_by_name};
use crate::state::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    Approved,
    Rejected,
    /// Nobody decided before `approval_expires_at`.
    Expired,
}

impl ApprovalStatus {
    pub const ALL: [ApprovalStatus; 4] = [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Rejected,
        ApprovalStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<ApprovalStatus> {
        ApprovalStatus::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// Whether the approval question has an answer (it can no longer be approved).
    pub fn is_decided(self) -> bool {
        match self {
            ApprovalStatus::Pending => false,
            ApprovalStatus::Approved | ApprovalStatus::Rejected | ApprovalStatus::Expired => true,
        }
    }
}

display_by_name!(ApprovalStatus);

serialize_by_name!(ApprovalStatus);

/// What the store saw, holding the operation's row lock, when a principal asked to
/// approve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalAsked {
    pub approval: ApprovalStatus,
    pub status: Status,
    /// The approval window closed (by the database clock).
    pub expired: bool,
    /// The hash the approver saw is the stored snapshot's.
    pub hash_matches: bool,
    /// This principal approved this operation before. An approval is only ever recorded
    /// for the stored hash, and the snapshot never changes, so together with
    /// `hash_matches` this says whether it is the same principal with the same hash.
    pub asker_approved_before: bool,
}

/// What to do with one approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalVerdict {
    /// Record it; the operation is approved once the quorum is reached.
    Count,
    /// The same principal with the same hash again: nothing new is recorded (an approval
    /// is idempotent, and one principal never counts twice towards a quorum).
    AlreadyCounted,
    /// Pending, but the window closed: mark it expired; nothing is recorded.
    Expire,
    /// Decided already, or no longer waiting to run.
    NotPending,
    /// The approver saw another snapshot than the one stored.
    HashMismatch,
}

/// The fate of one approval, in this order:
///
/// 1. an approval that can never hold any more (the window closed before the quorum, or
///    before an approved operation was claimed; the approval was rejected or expired; the
///    operation was cancelled) is refused whoever asks and whatever the hash: nothing
///    anybody sends revives it, and no 200 suggests it will still run;
/// 2. a hash that is not the stored snapshot's is refused, also when the operation is
///    approved and also when this principal approved the right hash before: a repeat
///    answers 200 only if it is the very same approval, never an approval of something
///    else that happens to be ignored;
/// 3. the same principal with the same hash is answered as it was the first time (the
///    quorum it counted towards may be complete and the operation running or done);
/// 4. anyone else counts only while the approval is pending and the operation has not
///    started.
pub fn judge_approval(a: ApprovalAsked) -> ApprovalVerdict {
    match (a.approval, a.status) {
        (ApprovalStatus::Pending, _) if a.expired => ApprovalVerdict::Expire,
        (ApprovalStatus::Rejected | ApprovalStatus::Expired, _) | (_, Status::Cancelled) => {
            ApprovalVerdict::NotPending
        }
        // Execute claims only within the window: this one will be expired, never run.
        (ApprovalStatus::Approved, Status::NotStarted) if a.expired => ApprovalVerdict::NotPending,
        _ if !a.hash_matches => ApprovalVerdict::HashMismatch,
        _ if a.asker_approved_before => ApprovalVerdict::AlreadyCounted,
        (ApprovalStatus::Pending, Status::NotStarted) => ApprovalVerdict::Count,
        (
            ApprovalStatus::Pending | ApprovalStatus::Approved,
            Status::NotStarted
            | Status::InProgress
            | Status::Accepted
            | Status::Unknown
            | Status::Succeeded
            | Status::Failed
            | Status::Disputed,
        ) => ApprovalVerdict::NotPending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expected verdict, written as the decision table in docs/api.md reads (row by
    /// row, first match wins), independently of the match in [`judge_approval`].
    fn table(a: ApprovalAsked) -> ApprovalVerdict {
        use ApprovalVerdict as V;
        let closed = matches!(
            a.approval,
            ApprovalStatus::Rejected | ApprovalStatus::Expired
        ) || a.status == Status::Cancelled
            || (a.approval == ApprovalStatus::Approved
                && a.status == Status::NotStarted
                && a.expired);
        if a.approval == ApprovalStatus::Pending && a.expired {
            V::Expire
        } else if closed {
            V::NotPending
        } else if !a.hash_matches {
            V::HashMismatch
        } else if a.asker_approved_before {
            V::AlreadyCounted
        } else if a.approval == ApprovalStatus::Pending && a.status == Status::NotStarted {
            V::Count
        } else {
            V::NotPending
        }
    }

    fn every_question() -> impl Iterator<Item = ApprovalAsked> {
        ApprovalStatus::ALL.into_iter().flat_map(|approval| {
            Status::ALL.into_iter().flat_map(move |status| {
                [false, true].into_iter().flat_map(move |expired| {
                    [false, true].into_iter().flat_map(move |hash_matches| {
                        [false, true]
                            .into_iter()
                            .map(move |asker_approved_before| ApprovalAsked {
                                approval,
                                status,
                                expired,
                                hash_matches,
                                asker_approved_before,
                            })
                    })
                })
            })
        })
    }

    #[test]
    fn every_approval_is_judged_as_the_decision_table_says() {
        let mut seen = 0;
        for asked in every_question() {
            assert_eq!(judge_approval(asked), table(asked), "{asked:?}");
            seen += 1;
        }
        assert_eq!(seen, 4 * 8 * 2 * 2 * 2);
    }

    #[test]
    fn only_the_same_principal_with_the_same_hash_is_answered_as_before() {
        for asked in every_question() {
            if judge_approval(asked) == ApprovalVerdict::AlreadyCounted {
                assert!(
                    asked.asker_approved_before && asked.hash_matches,
                    "{asked:?}"
                );
                // Within the window, or approved and claimed before it closed.
                assert!(
                    !asked.expired
                        || (asked.approval == ApprovalStatus::Approved
                            && asked.status != Status::NotStarted),
                    "{asked:?}"
                );
            }
        }
    }

    #[test]
    fn another_hash_is_a_mismatch_even_after_the_quorum_or_a_first_approval() {
        for asker_approved_before in [false, true] {
            for approval in [ApprovalStatus::Pending, ApprovalStatus::Approved] {
                for status in [Status::NotStarted, Status::InProgress, Status::Succeeded] {
                    let asked = ApprovalAsked {
                        approval,
                        status,
                        expired: false,
                        hash_matches: false,
                        asker_approved_before,
                    };
                    assert_eq!(
                        judge_approval(asked),
                        ApprovalVerdict::HashMismatch,
                        "{asked:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_rejected_cancelled_or_expired_operation_is_never_approved_again() {
        for asked in every_question() {
            let closed = matches!(
                asked.approval,
                ApprovalStatus::Rejected | ApprovalStatus::Expired
            ) || asked.status == Status::Cancelled
                || (asked.expired
                    && (asked.approval == ApprovalStatus::Pending
                        || asked.status == Status::NotStarted));
            if closed {
                assert!(
                    matches!(
                        judge_approval(asked),
                        ApprovalVerdict::NotPending | ApprovalVerdict::Expire
                    ),
                    "{asked:?}"
                );
            }
        }
    }

    #[test]
    fn only_a_pending_unexpired_unstarted_operation_with_the_same_hash_counts_an_approval() {
        for asked in every_question() {
            let counts = asked.approval == ApprovalStatus::Pending
                && asked.status == Status::NotStarted
                && !asked.expired
                && asked.hash_matches
                && !asked.asker_approved_before;
            assert_eq!(
                judge_approval(asked) == ApprovalVerdict::Count,
                counts,
                "{asked:?}"
            );
        }
    }

    #[test]
    fn round_trips_and_only_pending_is_undecided() {
        for a in ApprovalStatus::ALL {
            assert_eq!(ApprovalStatus::parse(a.as_str()), Some(a));
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
            assert_eq!(a.is_decided(), a != ApprovalStatus::Pending);
        }
        assert_eq!(ApprovalStatus::parse("maybe"), None);
    }
}
