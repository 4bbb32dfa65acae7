//! What becomes of an operator's dispute: judged here from the state table, applied by
//! the store (`fleet_store`'s dispute, one transition with the operator's history row),
//! guarded again by the database (`operations_status_transition`, which also asks for
//! the operator's recorded decision). The `rule_tables` test in `tests/fleet-tests` runs
//! every status through the store and the database and through [`judge_dispute`].

use crate::{transition, Event, Status};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisputeVerdict {
    /// Move it to `disputed`.
    Dispute,
    /// Disputed already: nothing changes.
    AlreadyDisputed,
    /// A final outcome: no dispute moves it.
    Refused,
}

/// The fate of a dispute of an operation in `status`.
pub fn judge_dispute(status: Status) -> DisputeVerdict {
    match transition(status, Event::OperatorDispute) {
        _ if status == Status::Disputed => DisputeVerdict::AlreadyDisputed,
        Ok(_) => DisputeVerdict::Dispute,
        Err(_) => DisputeVerdict::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_not_final_is_disputed_and_a_final_outcome_is_not() {
        for status in Status::ALL {
            let expected = match status {
                Status::Disputed => DisputeVerdict::AlreadyDisputed,
                s if s.is_final_outcome() => DisputeVerdict::Refused,
                _ => DisputeVerdict::Dispute,
            };
            assert_eq!(judge_dispute(status), expected, "{status}");
        }
    }
}
