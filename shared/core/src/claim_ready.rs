//! Which operations execute's claim takes: the rule the claim's compare-and-set applies
//! in its WHERE clause (`fleet_store`'s claim statement), written once here. The store
//! keeps the SQL, since the database is the lock whoever connects; the `rule_tables`
//! test in `tests/fleet-tests` runs the same rows through that statement and through
//! [`ready_to_claim`] and asserts equal answers.
//!
//! A row is claimed only while it is unstarted (a row in progress is never claimed
//! again, whatever its lease: an expired lease is reconcile's to settle), approved, not
//! escalated, within its approval window, with the approved hash its stored hash, under a
//! policy version the claimer accepts, at the fence the claimer read (when it read one),
//! and while its approval still stands: its live quorum ([`crate::live_quorum`]) is met
//! now, or a mandate that still stands approved it.
//!
//! Execute's own reading of a row ([`crate::execute::decide`]) claims exactly these rows
//! among those whose approval stands and whose snapshot still hashes to its stored hash
//! (a unit test below holds the two together).

use crate::{ApprovalStatus, Status};

/// What the claim's statement reads of one operation row, at the moment it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimFacts {
    pub status: Status,
    pub approval: ApprovalStatus,
    /// An escalation is open: the row waits for a person.
    pub escalated: bool,
    /// The approval window closed (by the database clock).
    pub approval_expired: bool,
    /// The hash that was approved is the stored snapshot's `payload_hash`.
    pub approved_hash_matches: bool,
    /// The row's policy version is one the claimer accepts
    /// ([`crate::execute::policy_current`]).
    pub policy_current: bool,
    /// The fence the claimer read is still the row's (true for a claim that read none).
    pub fence_current: bool,
    /// Its live quorum is met now, or a standing mandate approved it.
    pub approval_stands: bool,
}

/// Whether the claim takes the row (see the module's rule).
pub fn ready_to_claim(f: ClaimFacts) -> bool {
    f.status == Status::NotStarted
        && f.approval == ApprovalStatus::Approved
        && !f.escalated
        && !f.approval_expired
        && f.approved_hash_matches
        && f.policy_current
        && f.fence_current
        && f.approval_stands
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::{decide, Decision, ExecuteFacts};

    fn flags(n: u32, bits: u32) -> Vec<bool> {
        (0..bits).map(|b| n & (1 << b) != 0).collect()
    }

    #[test]
    fn execute_decides_to_claim_exactly_the_rows_the_claim_takes() {
        let mut claims = 0;
        for status in Status::ALL {
            for approval in ApprovalStatus::ALL {
                for n in 0..64 {
                    let f = flags(n, 6);
                    let facts = ExecuteFacts {
                        status,
                        approval,
                        escalated: f[0],
                        approval_expired: f[1],
                        lease_expired: f[2],
                        approved_hash_matches: f[3],
                        snapshot_hash_matches: f[4],
                        policy_current: f[5],
                    };
                    let claim = ClaimFacts {
                        status,
                        approval,
                        escalated: facts.escalated,
                        approval_expired: facts.approval_expired,
                        approved_hash_matches: facts.approved_hash_matches,
                        policy_current: facts.policy_current,
                        fence_current: true,
                        approval_stands: true,
                    };
                    let decided = decide(facts) == Decision::Claim;
                    assert_eq!(
                        decided,
                        ready_to_claim(claim) && facts.snapshot_hash_matches,
                        "{facts:?}"
                    );
                    claims += usize::from(decided);
                }
            }
        }
        // Approved, unstarted, everything agreeing; the lease either way.
        assert_eq!(claims, 2);
    }

    #[test]
    fn every_fact_alone_keeps_a_ready_row_from_being_claimed() {
        let ready = ClaimFacts {
            status: Status::NotStarted,
            approval: ApprovalStatus::Approved,
            escalated: false,
            approval_expired: false,
            approved_hash_matches: true,
            policy_current: true,
            fence_current: true,
            approval_stands: true,
        };
        assert!(ready_to_claim(ready));
        for not in [
            ClaimFacts {
                escalated: true,
                ..ready
            },
            ClaimFacts {
                approval_expired: true,
                ..ready
            },
            ClaimFacts {
                approved_hash_matches: false,
                ..ready
            },
            ClaimFacts {
                policy_current: false,
                ..ready
            },
            ClaimFacts {
                fence_current: false,
                ..ready
            },
            ClaimFacts {
                approval_stands: false,
                ..ready
            },
        ] {
            assert!(!ready_to_claim(not), "{not:?}");
        }
        for status in Status::ALL.into_iter().filter(|&s| s != Status::NotStarted) {
            assert!(!ready_to_claim(ClaimFacts { status, ..ready }), "{status}");
        }
        for approval in ApprovalStatus::ALL
            .into_iter()
            .filter(|&a| a != ApprovalStatus::Approved)
        {
            assert!(
                !ready_to_claim(ClaimFacts { approval, ..ready }),
                "{approval}"
            );
        }
    }
}
