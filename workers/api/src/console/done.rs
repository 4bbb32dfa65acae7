//! The confirmation an operation's page shows after a decision ("You approved this
//! snapshot."), said only when that person's decision is on record for that operation.
//! The decision forms answer with `?done=<decision>` in the address, which anyone can type
//! or be sent a link with: the address says what to confirm, the records say whether
//! there is anything to confirm.

use fleet_core::history::HistoryKind;
use fleet_core::{ApprovalStatus, Status};
use fleet_store::{ApprovalGiven, EventRow, OperationRow};

/// The decisions one person has on record for one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Their approval of the stored snapshot is counted.
    pub approved: bool,
    /// The operation was rejected, by them.
    pub rejected: bool,
    /// They settled it (succeeded, failed, cancelled) as an operator.
    pub resolved: bool,
    /// They disputed it as an operator.
    pub disputed: bool,
}

impl Recorded {
    /// What `name` has on record for the operation `row`, from its approvals of the
    /// stored snapshot and its history. Names are compared as stored, never as shown.
    pub fn of(
        name: &str,
        row: &OperationRow,
        approvals: &[ApprovalGiven],
        events: &[EventRow],
    ) -> Recorded {
        // An operator's history rows name them as `operator:<name>` (fleet-store).
        let as_operator = format!("operator:{name}");
        let operator_moved_to = |wanted: &dyn Fn(Status) -> bool| {
            events.iter().any(|e| {
                e.kind == HistoryKind::Transition
                    && e.actor == as_operator
                    && e.to_status.is_some_and(wanted)
            })
        };
        Recorded {
            approved: approvals.iter().any(|a| a.principal == name),
            rejected: row.approval_status == ApprovalStatus::Rejected
                && row.decided_by.as_deref() == Some(name),
            resolved: operator_moved_to(&|s| {
                matches!(s, Status::Succeeded | Status::Failed | Status::Cancelled)
            }),
            disputed: operator_moved_to(&|s| s == Status::Disputed),
        }
    }

    fn any(self) -> bool {
        self.approved || self.rejected || self.resolved || self.disputed
    }
}

/// The confirmation for `done` (the decision the address names), or none when that
/// decision of this person is not on record (or `done` names no decision).
pub fn confirmation(done: Option<&str>, recorded: Recorded) -> Option<&'static str> {
    let (on_record, text) = match done? {
        "approved" => (recorded.approved, "You approved this snapshot."),
        "rejected" => (
            recorded.rejected,
            "You rejected this operation; it is cancelled.",
        ),
        "resolved" => (recorded.resolved, "You resolved this operation."),
        "disputed" => (
            recorded.disputed,
            "You disputed this operation; the workers will not move it again.",
        ),
        "already" => (
            recorded.any(),
            "You had already taken this decision; nothing changed.",
        ),
        _ => return None,
    };
    on_record.then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DONE: [&str; 5] = ["approved", "rejected", "resolved", "disputed", "already"];

    #[test]
    fn nothing_on_record_confirms_nothing() {
        for done in DONE {
            assert_eq!(
                confirmation(Some(done), Recorded::default()),
                None,
                "{done}"
            );
        }
    }

    #[test]
    fn each_decision_confirms_only_itself() {
        let only = |f: fn(&mut Recorded)| {
            let mut r = Recorded::default();
            f(&mut r);
            r
        };
        let cases = [
            ("approved", only(|r| r.approved = true)),
            ("rejected", only(|r| r.rejected = true)),
            ("resolved", only(|r| r.resolved = true)),
            ("disputed", only(|r| r.disputed = true)),
        ];
        for (done, recorded) in cases {
            assert!(confirmation(Some(done), recorded).is_some(), "{done}");
            assert!(confirmation(Some("already"), recorded).is_some(), "{done}");
            for other in DONE.iter().filter(|d| **d != done && **d != "already") {
                assert_eq!(
                    confirmation(Some(other), recorded),
                    None,
                    "{done} → {other}"
                );
            }
        }
    }

    #[test]
    fn an_unknown_word_or_none_confirms_nothing() {
        let all = Recorded {
            approved: true,
            rejected: true,
            resolved: true,
            disputed: true,
        };
        assert_eq!(confirmation(None, all), None);
        assert_eq!(confirmation(Some("hacked"), all), None);
    }
}
