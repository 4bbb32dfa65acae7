//! When a caller waiting on an operation (`GET /v1/operations/{id}?wait_for=…`) has its
//! answer. Pure, so the rule is the same for every waiter and tested without I/O.

use crate::approval::ApprovalStatus;
use crate::state::Status;

/// What a caller waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    /// The approval was decided (approved, rejected or expired).
    Decision,
    /// The operation is final (succeeded, failed, cancelled, disputed).
    Final,
}

impl WaitFor {
    pub fn parse(s: &str) -> Option<WaitFor> {
        match s {
            "decision" => Some(WaitFor::Decision),
            "final" => Some(WaitFor::Final),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WaitFor::Decision => "decision",
            WaitFor::Final => "final",
        }
    }
}

/// The bits of a row that decide a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitState {
    pub status: Status,
    pub approval: ApprovalStatus,
    pub escalated: bool,
}

/// How a wait ends, when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOver {
    /// The operation is where it was awaited.
    Reached,
    /// It was escalated to a person first, which can take hours: the wait ends there too.
    Escalated,
}

impl WaitState {
    /// Whether a waiter for `wait_for` has its answer, and which. A final operation also
    /// ends a wait for the decision (it will never be decided now, e.g. an operation
    /// superseded while pending); an operation both final and escalated is reached.
    pub fn over(self, wait_for: WaitFor) -> Option<WaitOver> {
        let reached = match wait_for {
            WaitFor::Decision => self.approval.is_decided() || self.status.is_final(),
            WaitFor::Final => self.status.is_final(),
        };
        if reached {
            Some(WaitOver::Reached)
        } else if self.escalated {
            Some(WaitOver::Escalated)
        } else {
            None
        }
    }
}

/// Whether a waiter has its answer ([`WaitState::over`]).
pub fn wait_is_over(wait_for: WaitFor, state: WaitState) -> bool {
    state.over(wait_for).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: Status, approval: ApprovalStatus, escalated: bool) -> WaitState {
        WaitState {
            status,
            approval,
            escalated,
        }
    }

    #[test]
    fn a_wait_for_the_decision_ends_once_it_is_decided_final_or_escalated() {
        for status in Status::ALL {
            for approval in ApprovalStatus::ALL {
                for escalated in [false, true] {
                    let expected = approval.is_decided() || status.is_final() || escalated;
                    assert_eq!(
                        wait_is_over(WaitFor::Decision, state(status, approval, escalated)),
                        expected,
                        "{status} {approval} {escalated}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_wait_for_the_end_ends_only_when_final_or_escalated() {
        for status in Status::ALL {
            for approval in ApprovalStatus::ALL {
                assert_eq!(
                    wait_is_over(WaitFor::Final, state(status, approval, false)),
                    status.is_final(),
                    "{status} {approval}"
                );
                assert!(wait_is_over(WaitFor::Final, state(status, approval, true)));
            }
        }
        // An approved payment still in flight is not an answer.
        assert!(!wait_is_over(
            WaitFor::Final,
            state(Status::Unknown, ApprovalStatus::Approved, false)
        ));
        assert!(wait_is_over(
            WaitFor::Final,
            state(Status::Succeeded, ApprovalStatus::Approved, false)
        ));
    }

    #[test]
    fn names_parse() {
        assert_eq!(WaitFor::parse("decision"), Some(WaitFor::Decision));
        assert_eq!(WaitFor::parse("final"), Some(WaitFor::Final));
        assert_eq!(WaitFor::parse("succeeded"), None);
        assert_eq!(WaitFor::Final.as_str(), "final");
    }

    #[test]
    fn an_escalated_wait_is_told_from_a_reached_one() {
        let escalated = state(Status::Unknown, ApprovalStatus::Approved, true);
        assert_eq!(escalated.over(WaitFor::Final), Some(WaitOver::Escalated));
        // Escalated and final: it is final.
        let done = state(Status::Succeeded, ApprovalStatus::Approved, true);
        assert_eq!(done.over(WaitFor::Final), Some(WaitOver::Reached));
        let pending = state(Status::NotStarted, ApprovalStatus::Pending, false);
        assert_eq!(pending.over(WaitFor::Decision), None);
    }
}
