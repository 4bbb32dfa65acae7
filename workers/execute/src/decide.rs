//! What the execute worker does with a row it was rung for, decided from the row alone
//! (pure: no I/O, the database clock's verdicts arrive as flags on the row).

use fleet_core::{ApprovalStatus, Status};
use fleet_store::OperationRow;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approved, unexpired, hashes agree, policy current: claim it and call the provider.
    Claim,
    /// It must never run: cancel with this reason (and, for an expired approval, mark it).
    Cancel(&'static str),
    /// It must not run as it is, and nothing explains it but tampering or a bug: a person
    /// decides (the row stays where it is, escalated).
    Escalate(&'static str),
    /// The row needs reconcile (unknown, or a holder's lease expired): ring its bell.
    RingReconcile,
    /// Nothing to do here (waiting for approval, someone else holds it, or final).
    Nothing,
}

/// `accepted_policies` empty means every policy version is current.
pub fn decide(row: &OperationRow, accepted_policies: &[String]) -> Decision {
    if row.escalated_at.is_some() {
        // Escalated means hands off: it waits for a person, whatever its status.
        return Decision::Nothing;
    }
    match row.status {
        Status::NotStarted => decide_not_started(row, accepted_policies),
        Status::InProgress if row.lease_expired => Decision::RingReconcile,
        Status::InProgress => Decision::Nothing,
        Status::Unknown => Decision::RingReconcile,
        Status::Accepted
        | Status::Succeeded
        | Status::Failed
        | Status::Cancelled
        | Status::Disputed => Decision::Nothing,
    }
}

fn decide_not_started(row: &OperationRow, accepted_policies: &[String]) -> Decision {
    match row.approval_status {
        ApprovalStatus::Pending if row.approval_expired => Decision::Cancel("approval_expired"),
        ApprovalStatus::Pending => Decision::Nothing,
        ApprovalStatus::Rejected => Decision::Cancel("approval_rejected"),
        ApprovalStatus::Expired => Decision::Cancel("approval_expired"),
        _ if row.approval_expired => Decision::Cancel("approval_expired"),
        // The stored snapshot must still hash to what was approved: a row edited behind the
        // trigger's back (or a bug) must never reach the provider, and is never quietly
        // cancelled either — someone must look at how it happened.
        _ if row.approved_hash.as_deref() != Some(row.payload_hash.as_str()) => {
            Decision::Escalate("approved_hash_mismatch")
        }
        _ if row.snapshot().hash().as_str() != row.payload_hash => {
            Decision::Escalate("snapshot_hash_mismatch")
        }
        _ if !accepted_policies.is_empty() && !accepted_policies.contains(&row.policy_version) => {
            Decision::Cancel("policy_outdated")
        }
        _ => Decision::Claim,
    }
}

#[cfg(test)]
mod tests;
