//! Whether an operation can be replaced by a corrected intent that `supersedes` it.

use crate::Status;

/// What becomes of the operation a corrected intent supersedes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaceable {
    /// Never claimed: it is cancelled in the transaction that inserts its replacement.
    CancelIt,
    /// It ended without any possible effect: the replacement is inserted, nothing else.
    AlreadyEnded,
    /// A request may have gone out for it: the correction is refused with this reason.
    Refused(&'static str),
}

/// Whether the superseded operation can still be replaced: it was never claimed, or it
/// ended without any possible effect (a conditional update whose precondition the
/// provider refused, or a claim that never happened). `reason` is its `status_reason`.
pub fn replaceable(status: Status, fence: i64, reason: Option<&str>) -> Replaceable {
    match (status, reason) {
        // Claimed before (fence > 0) means a request may have gone out under the old key:
        // a new operation with a new key could double it.
        (Status::NotStarted, _) if fence == 0 => Replaceable::CancelIt,
        (Status::Cancelled, Some("version_conflict" | "status_conflict")) => {
            Replaceable::AlreadyEnded
        }
        (Status::Cancelled, _) if fence == 0 => Replaceable::AlreadyEnded,
        _ => Replaceable::Refused("supersedes_executed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXECUTED: Replaceable = Replaceable::Refused("supersedes_executed");

    #[test]
    fn a_never_claimed_operation_is_cancelled_for_its_replacement() {
        assert_eq!(
            replaceable(Status::NotStarted, 0, None),
            Replaceable::CancelIt
        );
        // Claimed once and sent back (its request provably never left, or was proven
        // absent): its key may have reached the provider.
        assert_eq!(replaceable(Status::NotStarted, 1, None), EXECUTED);
    }

    #[test]
    fn a_conflict_ended_without_effect_whatever_its_fence() {
        for reason in ["version_conflict", "status_conflict"] {
            for fence in [0, 1, 3] {
                assert_eq!(
                    replaceable(Status::Cancelled, fence, Some(reason)),
                    Replaceable::AlreadyEnded,
                    "{reason} at fence {fence}"
                );
            }
        }
    }

    #[test]
    fn a_cancellation_is_without_effect_only_if_never_claimed() {
        for reason in [None, Some("approval_rejected"), Some("superseded")] {
            assert_eq!(
                replaceable(Status::Cancelled, 0, reason),
                Replaceable::AlreadyEnded
            );
            assert_eq!(replaceable(Status::Cancelled, 2, reason), EXECUTED);
        }
    }

    #[test]
    fn anything_that_may_have_reached_the_provider_is_refused() {
        for status in [
            Status::InProgress,
            Status::Accepted,
            Status::Unknown,
            Status::Succeeded,
            Status::Failed,
            Status::Disputed,
        ] {
            for fence in [0, 1] {
                for reason in [None, Some("version_conflict")] {
                    assert_eq!(
                        replaceable(status, fence, reason),
                        EXECUTED,
                        "{status} {fence} {reason:?}"
                    );
                }
            }
        }
    }
}
