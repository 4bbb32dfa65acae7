//! What the execute worker does with a row it was rung for, decided from the row's facts
//! alone (the database clock's verdicts arrive as flags).

use crate::{ApprovalStatus, Reason, Status};

/// What [`decide`] reads of an operation row (the worker builds it from the row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecuteFacts {
    pub status: Status,
    pub approval: ApprovalStatus,
    /// An escalation is open: the row waits for a person.
    pub escalated: bool,
    /// The approval window closed (by the database clock).
    pub approval_expired: bool,
    /// The holder's lease expired (by the database clock).
    pub lease_expired: bool,
    /// The hash that was approved is the stored snapshot's `payload_hash`.
    pub approved_hash_matches: bool,
    /// The stored snapshot still hashes to its `payload_hash`.
    pub snapshot_hash_matches: bool,
    /// The operation's policy version is in force ([`policy_current`]).
    pub policy_current: bool,
}

impl ExecuteFacts {
    /// The facts of a row [`decide`] claims: approved and not started, nothing expired or
    /// escalated, both hashes agreeing, its policy in force.
    pub const CLAIMABLE: ExecuteFacts = ExecuteFacts {
        status: Status::NotStarted,
        approval: ApprovalStatus::Approved,
        escalated: false,
        approval_expired: false,
        lease_expired: false,
        approved_hash_matches: true,
        snapshot_hash_matches: true,
        policy_current: true,
    };
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approved, unexpired, hashes agree, policy current: claim it and call the provider.
    Claim,
    /// It must never run: cancel with this reason (and, for an expired approval, mark it).
    Cancel(Reason),
    /// It must not run as it is, and nothing explains it but tampering or a bug: a person
    /// decides (the row stays where it is, escalated).
    Escalate(Reason),
    /// The row needs reconcile (unknown, or a holder's lease expired): ring its bell.
    RingReconcile,
    /// Nothing to do here (waiting for approval, someone else holds it, or final).
    Nothing,
}

/// Whether `policy_version` is in force. `accepted_policies` empty means every policy
/// version is.
pub fn policy_current(accepted_policies: &[String], policy_version: &str) -> bool {
    accepted_policies.is_empty() || accepted_policies.iter().any(|p| p == policy_version)
}

pub fn decide(facts: ExecuteFacts) -> Decision {
    if facts.escalated {
        // Escalated means hands off: it waits for a person, whatever its status.
        return Decision::Nothing;
    }
    match facts.status {
        Status::NotStarted => decide_not_started(facts),
        Status::InProgress if facts.lease_expired => Decision::RingReconcile,
        Status::InProgress => Decision::Nothing,
        Status::Unknown => Decision::RingReconcile,
        Status::Accepted
        | Status::Succeeded
        | Status::Failed
        | Status::Cancelled
        | Status::Disputed => Decision::Nothing,
    }
}

fn decide_not_started(facts: ExecuteFacts) -> Decision {
    match facts.approval {
        ApprovalStatus::Pending if facts.approval_expired => {
            Decision::Cancel(Reason::ApprovalExpired)
        }
        ApprovalStatus::Pending => Decision::Nothing,
        ApprovalStatus::Rejected => Decision::Cancel(Reason::ApprovalRejected),
        ApprovalStatus::Expired => Decision::Cancel(Reason::ApprovalExpired),
        ApprovalStatus::Approved if facts.approval_expired => {
            Decision::Cancel(Reason::ApprovalExpired)
        }
        // The stored snapshot must still hash to what was approved: a row edited behind the
        // trigger's back (or a bug) must never reach the provider, and is never quietly
        // cancelled either — someone must look at how it happened.
        ApprovalStatus::Approved if !facts.approved_hash_matches => {
            Decision::Escalate(Reason::ApprovedHashMismatch)
        }
        ApprovalStatus::Approved if !facts.snapshot_hash_matches => {
            Decision::Escalate(Reason::SnapshotHashMismatch)
        }
        ApprovalStatus::Approved if !facts.policy_current => {
            Decision::Cancel(Reason::PolicyOutdated)
        }
        ApprovalStatus::Approved => Decision::Claim,
    }
}

#[cfg(test)]
mod tests;
