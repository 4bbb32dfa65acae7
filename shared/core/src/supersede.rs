//! Whether an operation can be replaced by a corrected intent that `supersedes` it: who
//! may replace it ([`judge`]), and whether its state still allows it ([`replaceable`]).

use crate::refusal::IntakeRefusal;
use crate::{Reason, Status};

/// `supersedes` names no operation the sender can see: none at all, or one of another
/// tenant (the same answer, so nobody learns which ids another tenant uses).
pub const UNKNOWN_OPERATION: &str = IntakeRefusal::SupersedesUnknownOperation.as_str();
/// `supersedes` names an operation of the sender's tenant submitted by someone else: by
/// another principal, or through the other intake (the queue, which has no principal,
/// against an operation submitted over the API, or the other way round).
pub const FORBIDDEN: &str = IntakeRefusal::SupersedesForbidden.as_str();
/// `supersedes` names an operation of another action (the name predates the tenant rule
/// above: another tenant's operation is [`UNKNOWN_OPERATION`]).
pub const OTHER_ACTION: &str = IntakeRefusal::SupersedesOtherTenantOrAction.as_str();
/// `supersedes` names an operation a request may have gone out for.
pub const EXECUTED: &str = IntakeRefusal::SupersedesExecuted.as_str();

/// Every refusal of a superseding intent.
pub const REFUSALS: [&str; 4] = [UNKNOWN_OPERATION, FORBIDDEN, OTHER_ACTION, EXECUTED];

/// The correcting intent, as far as the rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Correction<'a> {
    pub tenant_id: &'a str,
    pub action: &'a str,
    /// The authenticated principal that sent it; `None` for the queue, which has none.
    pub submitted_by: Option<&'a str>,
}

/// The operation a correction names, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superseded<'a> {
    pub tenant_id: &'a str,
    pub action: &'a str,
    /// Who submitted it; `None` when it came through the queue.
    pub submitted_by: Option<&'a str>,
    pub status: Status,
    pub fence: i64,
    /// Its `status_reason`.
    pub reason: Option<Reason>,
}

/// Whether `correction` may replace `old` (`None`: no operation has that id), in this
/// order: the tenant (another tenant's operation is answered like a missing one), who
/// submitted it, the action, then its state ([`replaceable`]).
///
/// Only the principal that submitted an operation replaces it: a colleague of the same
/// tenant must not be able to cancel it by naming it. Operators do not submit intents
/// (`fleet_core::authz`); they act on an operation through their own routes. The queue
/// authenticates nobody, so an intent from it may replace only an operation that also
/// came through the queue, never one a principal submitted over the API.
pub fn judge(correction: &Correction<'_>, old: Option<&Superseded<'_>>) -> Replaceable {
    let Some(old) = old.filter(|old| old.tenant_id == correction.tenant_id) else {
        return Replaceable::Refused(UNKNOWN_OPERATION);
    };
    let same_submitter = match (correction.submitted_by, old.submitted_by) {
        (Some(by), Some(submitter)) => by == submitter,
        (None, None) => true,
        (Some(_), None) | (None, Some(_)) => false,
    };
    if !same_submitter {
        return Replaceable::Refused(FORBIDDEN);
    }
    if old.action != correction.action {
        return Replaceable::Refused(OTHER_ACTION);
    }
    replaceable(old.status, old.fence, old.reason)
}

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
pub fn replaceable(status: Status, fence: i64, reason: Option<Reason>) -> Replaceable {
    match (status, reason) {
        // Claimed before (fence > 0) means a request may have gone out under the old key:
        // a new operation with a new key could double it.
        (Status::NotStarted, _) if fence == 0 => Replaceable::CancelIt,
        (
            Status::Cancelled,
            Some(Reason::VersionConflict | Reason::StatusConflict | Reason::BeneficiaryChanged),
        ) => Replaceable::AlreadyEnded,
        (Status::Cancelled, _) if fence == 0 => Replaceable::AlreadyEnded,
        _ => Replaceable::Refused(EXECUTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXECUTED: Replaceable = Replaceable::Refused(super::EXECUTED);

    const TENANT: &str = "org_482";
    const ACTION: &str = "payment.create";

    fn correction(submitted_by: Option<&str>) -> Correction<'_> {
        Correction {
            tenant_id: TENANT,
            action: ACTION,
            submitted_by,
        }
    }

    fn never_claimed(submitted_by: Option<&str>) -> Superseded<'_> {
        Superseded {
            tenant_id: TENANT,
            action: ACTION,
            submitted_by,
            status: Status::NotStarted,
            fence: 0,
            reason: None,
        }
    }

    #[test]
    fn the_submitter_replaces_its_own_operation() {
        let old = never_claimed(Some("billing-bot"));
        assert_eq!(
            judge(&correction(Some("billing-bot")), Some(&old)),
            Replaceable::CancelIt
        );
    }

    #[test]
    fn another_principal_of_the_tenant_is_forbidden_whatever_the_state() {
        for status in Status::ALL {
            let old = Superseded {
                status,
                ..never_claimed(Some("billing-bot"))
            };
            assert_eq!(
                judge(&correction(Some("colleague-bot")), Some(&old)),
                Replaceable::Refused(FORBIDDEN),
                "{status}"
            );
        }
    }

    #[test]
    fn the_queue_replaces_only_what_came_through_the_queue() {
        assert_eq!(
            judge(&correction(None), Some(&never_claimed(None))),
            Replaceable::CancelIt
        );
        assert_eq!(
            judge(&correction(None), Some(&never_claimed(Some("billing-bot")))),
            Replaceable::Refused(FORBIDDEN),
            "the queue never replaces what a principal submitted"
        );
        assert_eq!(
            judge(&correction(Some("billing-bot")), Some(&never_claimed(None))),
            Replaceable::Refused(FORBIDDEN),
            "nor does a principal replace what came through the queue"
        );
    }

    #[test]
    fn another_tenants_operation_is_answered_exactly_like_a_missing_one() {
        let missing = judge(&correction(Some("billing-bot")), None);
        assert_eq!(missing, Replaceable::Refused(UNKNOWN_OPERATION));
        // Whoever submitted it and whatever its action or state: nothing about it shows.
        for submitted_by in [None, Some("billing-bot"), Some("their-bot")] {
            for action in [ACTION, "refund.create"] {
                for status in Status::ALL {
                    let theirs = Superseded {
                        tenant_id: "org_999",
                        action,
                        status,
                        ..never_claimed(submitted_by)
                    };
                    for by in [None, Some("billing-bot")] {
                        assert_eq!(judge(&correction(by), Some(&theirs)), missing);
                    }
                }
            }
        }
    }

    #[test]
    fn the_submitter_is_checked_before_the_action_and_the_state() {
        let other_action = Superseded {
            action: "refund.create",
            ..never_claimed(Some("billing-bot"))
        };
        assert_eq!(
            judge(&correction(Some("colleague-bot")), Some(&other_action)),
            Replaceable::Refused(FORBIDDEN)
        );
        assert_eq!(
            judge(&correction(Some("billing-bot")), Some(&other_action)),
            Replaceable::Refused(OTHER_ACTION)
        );
        let ran = Superseded {
            status: Status::Succeeded,
            fence: 1,
            ..never_claimed(Some("billing-bot"))
        };
        assert_eq!(
            judge(&correction(Some("billing-bot")), Some(&ran)),
            EXECUTED
        );
    }

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
        for reason in [
            Reason::VersionConflict,
            Reason::StatusConflict,
            Reason::BeneficiaryChanged,
        ] {
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
        for reason in [
            None,
            Some(Reason::ApprovalRejected),
            Some(Reason::Superseded),
        ] {
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
                for reason in [None, Some(Reason::VersionConflict)] {
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
