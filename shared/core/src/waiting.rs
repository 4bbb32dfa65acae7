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

/// Whether a waiter has its answer. An escalated operation waits for a person, which can
/// take hours, so every wait ends there too; a final operation also ends a wait for the
/// decision (it will never be decided now, e.g. an operation superseded while pending).
pub fn wait_is_over(wait_for: WaitFor, state: WaitState) -> bool {
    if state.escalated || state.status.is_final() {
        return true;
    }
    match wait_for {
        WaitFor::Decision => state.approval.is_decided(),
        WaitFor::Final => false,
    }
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
}
