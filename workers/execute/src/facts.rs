//! What `fleet_core::execute::decide` reads of a row the worker was rung for: the row's
//! columns as the domain's facts (the database clock's verdicts arrive as flags).

use fleet_core::execute::{policy_current, ExecuteFacts};
use fleet_store::OperationRow;

/// `accepted_policies` empty means every policy version is current.
pub(crate) fn facts_of(row: &OperationRow, accepted_policies: &[String]) -> ExecuteFacts {
    ExecuteFacts {
        status: row.status,
        approval: row.approval_status,
        escalated: row.escalated_at.is_some(),
        approval_expired: row.approval_expired,
        lease_expired: row.lease_expired,
        approved_hash_matches: row.approved_hash.as_deref() == Some(row.payload_hash.as_str()),
        snapshot_hash_matches: row.snapshot().hash() == row.payload_hash,
        policy_current: policy_current(accepted_policies, &row.policy_version),
    }
}

#[cfg(test)]
mod tests;
