//! The approval side of an operation, as stored in `operations.approval_status`, and what
//! becomes of one approver's approval.

use std::fmt;

use crate::by_name::serialize_by_name;
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

impl fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// This principal approved this operation before.
    pub asker_approved_before: bool,
}

/// What to do with one approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalVerdict {
    /// Record it; the operation is approved once the quorum is reached.
    Count,
    /// The same principal again: nothing new is recorded (an approval is idempotent, and
    /// one principal never counts twice towards a quorum).
    AlreadyCounted,
    /// Pending, but the window closed: mark it expired; nothing is recorded.
    Expire,
    /// Decided already, or no longer waiting to run.
    NotPending,
    /// The approver saw another snapshot than the one stored.
    HashMismatch,
}

/// The fate of one approval. A replay by a principal that already approved is answered
/// as it was the first time, whatever happened since; anything else must find the
/// approval pending, the operation not started, the window open and the same hash.
pub fn judge_approval(a: ApprovalAsked) -> ApprovalVerdict {
    if a.asker_approved_before {
        return ApprovalVerdict::AlreadyCounted;
    }
    match (a.approval, a.status) {
        (ApprovalStatus::Pending, _) if a.expired => ApprovalVerdict::Expire,
        (ApprovalStatus::Pending, Status::NotStarted) if !a.hash_matches => {
            ApprovalVerdict::HashMismatch
        }
        (ApprovalStatus::Pending, Status::NotStarted) => ApprovalVerdict::Count,
        (
            ApprovalStatus::Pending
            | ApprovalStatus::Approved
            | ApprovalStatus::Rejected
            | ApprovalStatus::Expired,
            _,
        ) => ApprovalVerdict::NotPending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pending_unexpired_unstarted_operation_with_the_same_hash_counts_an_approval() {
        for approval in ApprovalStatus::ALL {
            for status in Status::ALL {
                for expired in [false, true] {
                    for hash_matches in [false, true] {
                        let asked = ApprovalAsked {
                            approval,
                            status,
                            expired,
                            hash_matches,
                            asker_approved_before: false,
                        };
                        let expected = if approval != ApprovalStatus::Pending {
                            ApprovalVerdict::NotPending
                        } else if expired {
                            ApprovalVerdict::Expire
                        } else if status != Status::NotStarted {
                            ApprovalVerdict::NotPending
                        } else if !hash_matches {
                            ApprovalVerdict::HashMismatch
                        } else {
                            ApprovalVerdict::Count
                        };
                        assert_eq!(judge_approval(asked), expected, "{asked:?}");
                        // The same principal again is always the first answer again.
                        let replay = ApprovalAsked {
                            asker_approved_before: true,
                            ..asked
                        };
                        assert_eq!(
                            judge_approval(replay),
                            ApprovalVerdict::AlreadyCounted,
                            "{replay:?}"
                        );
                    }
                }
            }
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
