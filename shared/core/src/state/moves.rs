//! The changes of status the state table allows, as pairs: what the database keeps
//! (`migrations/0054_status_moves.sql` lists exactly these, and a test compares the two).
//! The database sees rows, not events, so it can check only where a row may go from
//! where it is, and whether only a person's decision takes it there.

use super::{transition, Event, Status};

/// One change of status some event of the table makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatusMove {
    pub from: Status,
    pub to: Status,
    /// Every event that makes this move is an operator's decision
    /// ([`Event::is_operator_decision`]): no worker ever makes it.
    pub operator_only: bool,
}

/// Every change of status (`from` ≠ `to`) the table allows, each once, in the order of
/// [`Status::ALL`]. An event that leaves the status where it is (an escalation, an
/// operator confirming a success) changes no status and is not a move.
pub fn status_moves() -> Vec<StatusMove> {
    let mut moves = Vec::new();
    for from in Status::ALL {
        for to in Status::ALL {
            if from == to {
                continue;
            }
            let events: Vec<Event> = Event::ALL
                .into_iter()
                .filter(|&e| transition(from, e) == Ok(to))
                .collect();
            if !events.is_empty() {
                moves.push(StatusMove {
                    from,
                    to,
                    operator_only: events.iter().all(|e| e.is_operator_decision()),
                });
            }
        }
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_outcome_never_moves() {
        for m in status_moves() {
            assert!(
                !matches!(
                    m.from,
                    Status::Succeeded | Status::Failed | Status::Cancelled
                ),
                "{m:?}"
            );
        }
    }

    #[test]
    fn the_final_outcomes_are_exactly_the_statuses_no_move_leaves() {
        let moves = status_moves();
        for s in Status::ALL {
            assert_eq!(
                s.is_final_outcome(),
                !moves.iter().any(|m| m.from == s),
                "{s}"
            );
        }
    }

    #[test]
    fn only_an_operator_disputes_ends_a_dispute_or_cancels_a_started_operation() {
        let operator_only: Vec<(Status, Status)> = status_moves()
            .into_iter()
            .filter(|m| m.operator_only)
            .map(|m| (m.from, m.to))
            .collect();
        use Status as S;
        assert_eq!(
            operator_only,
            vec![
                (S::NotStarted, S::Disputed),
                (S::InProgress, S::Disputed),
                (S::Accepted, S::Cancelled),
                (S::Accepted, S::Disputed),
                (S::Unknown, S::Cancelled),
                (S::Unknown, S::Disputed),
                (S::Disputed, S::Succeeded),
                (S::Disputed, S::Failed),
                (S::Disputed, S::Cancelled),
            ]
        );
    }

    /// The migration that keeps these moves in the database lists exactly them (the
    /// integration tests ask the migrated database the same question).
    #[test]
    fn the_migration_lists_exactly_these_moves() {
        let sql = include_str!("../../../../migrations/0054_status_moves.sql");
        let listed: std::collections::BTreeSet<String> = sql
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("('"))
            .map(|l| l.trim_end_matches([',', ';']).to_owned())
            .collect();
        let expected: std::collections::BTreeSet<String> = status_moves()
            .into_iter()
            .map(|m| format!("('{}', '{}', {})", m.from, m.to, m.operator_only))
            .collect();
        assert_eq!(listed, expected);
    }
}
