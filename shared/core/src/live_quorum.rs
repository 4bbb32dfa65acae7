//! Which approvals of an operation count towards its quorum now: the rule the database
//! applies as `fleet_quorum_count` (migrations/0055_live_approvers.sql) whenever an
//! operation is approved or claimed, and fleet-execute applies again before a signed
//! operation's call. Pure: the operation, its approvals, the approvers' standing and the
//! keys, as read at the moment of counting, are inputs. A table test in
//! `tests/fleet-tests` (`live_quorum`) evaluates the same cases here and in the database
//! and asserts equal answers: change one, and the test names the other.
//!
//! An approval counts when all of these hold:
//! - it is of the operation's stored hash, not by the principal that submitted it, and not
//!   void (an approver's approvals of unstarted operations are voided when the approver is
//!   removed, given another role or loses the tenant);
//! - its principal exists, is not removed, has a role that may approve
//!   ([`Role::may`]`(`[`ApiAction::Approve`]`)`: approvers only) and holds a grant of the
//!   operation's tenant made no later than the approval (a grant withdrawn and made again
//!   does not revive what was approved under the old one).
//!
//! It counts as signed when, in addition, it carries a signature by a key registered for
//! its principal before the approval and not removed. (Whether the signature verifies is
//! [`crate::signed_quorum`]'s question, which only execute can answer.)

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::access::Role;
use crate::authz::ApiAction;

/// The operation whose quorum is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumSubject<'a> {
    pub tenant_id: &'a str,
    pub payload_hash: &'a str,
    pub submitted_by: Option<&'a str>,
    pub approvals_required: i16,
    pub signatures_required: i16,
}

/// One approvals row, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalFacts {
    pub principal: String,
    pub payload_hash: String,
    /// When it was recorded, by the database clock.
    pub at: DateTime<Utc>,
    /// The key it names, if it carries a signature.
    pub key_id: Option<String>,
    pub voided: bool,
}

/// A principal as it stands now, with its grant of the operation's tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproverStanding {
    pub principal: String,
    pub role: Role,
    pub removed: bool,
    /// When it was granted the operation's tenant; `None`: it is not.
    pub tenant_granted_at: Option<DateTime<Utc>>,
}

/// A registered key as it stands now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyStanding {
    pub key_id: String,
    pub principal: String,
    pub registered_at: DateTime<Utc>,
    pub removed: bool,
}

/// The approvals that count now, and how many of them count as signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LiveCount {
    pub counted: i64,
    pub signed: i64,
}

impl LiveCount {
    /// Whether the count makes the subject's quorum (approvals and signatures).
    pub fn meets(&self, subject: &QuorumSubject<'_>) -> bool {
        self.counted >= i64::from(subject.approvals_required)
            && self.signed >= i64::from(subject.signatures_required)
    }
}

/// Whether `standing` makes its principal a live approver of the operation's tenant for
/// an approval recorded at `at`.
pub fn is_live_approver(standing: &ApproverStanding, at: DateTime<Utc>) -> bool {
    standing.role.may(ApiAction::Approve)
        && !standing.removed
        && standing
            .tenant_granted_at
            .is_some_and(|granted| granted <= at)
}

/// Whether `approval` counts towards `subject`'s quorum now.
pub fn approval_counts(
    subject: &QuorumSubject<'_>,
    approval: &ApprovalFacts,
    standings: &[ApproverStanding],
) -> bool {
    approval.payload_hash == subject.payload_hash
        && !approval.voided
        && subject.submitted_by != Some(approval.principal.as_str())
        && standings
            .iter()
            .find(|s| s.principal == approval.principal)
            .is_some_and(|s| is_live_approver(s, approval.at))
}

/// Whether a counted `approval` counts as signed: a key of its own principal, registered
/// before it and not removed.
fn signed_by_a_live_key(approval: &ApprovalFacts, keys: &[KeyStanding]) -> bool {
    approval.key_id.as_deref().is_some_and(|id| {
        keys.iter().any(|k| {
            k.key_id == id
                && k.principal == approval.principal
                && k.registered_at < approval.at
                && !k.removed
        })
    })
}

/// Counts `subject`'s approvals by the module's rule (one per principal).
pub fn live_quorum(
    subject: &QuorumSubject<'_>,
    approvals: &[ApprovalFacts],
    standings: &[ApproverStanding],
    keys: &[KeyStanding],
) -> LiveCount {
    let mut seen = BTreeSet::new();
    let mut count = LiveCount::default();
    for a in approvals {
        if !approval_counts(subject, a, standings) || !seen.insert(a.principal.as_str()) {
            continue;
        }
        count.counted += 1;
        if signed_by_a_live_key(a, keys) {
            count.signed += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests;
