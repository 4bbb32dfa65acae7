//! The approval side of an operation, as stored in `operations.approval_status`.

use std::fmt;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_only_pending_is_undecided() {
        for a in ApprovalStatus::ALL {
            assert_eq!(ApprovalStatus::parse(a.as_str()), Some(a));
            assert_eq!(a.is_decided(), a != ApprovalStatus::Pending);
        }
        assert_eq!(ApprovalStatus::parse("maybe"), None);
    }
}
