use super::*;
use crate::transition;

const DEADLINE_S: u32 = 3_600;

fn due(status: Status) -> RowDue {
    RowDue {
        status,
        lease_expired: false,
        deadline_passed: false,
        escalated: false,
    }
}

fn paid() -> Found {
    Found::Succeeded {
        external_id: "pay_1".into(),
    }
}

fn refused() -> Found {
    Found::Failed {
        external_id: "pay_1".into(),
        code: "insufficient_funds".into(),
    }
}

fn pending() -> Found {
    Found::Pending {
        external_id: "pay_1".into(),
    }
}

#[test]
fn only_an_expired_lease_an_overdue_acceptance_or_an_unescalated_unknown_is_reconciled() {
    assert_eq!(
        next_step(RowDue {
            lease_expired: true,
            ..due(Status::InProgress)
        }),
        Step::ExpireLease
    );
    assert_eq!(next_step(due(Status::InProgress)), Step::LeaveAlone);
    assert_eq!(
        next_step(RowDue {
            deadline_passed: true,
            ..due(Status::Accepted)
        }),
        Step::SettleAccepted
    );
    assert_eq!(next_step(due(Status::Accepted)), Step::LeaveAlone);
    assert_eq!(next_step(due(Status::Unknown)), Step::SettleUnknown);
    assert_eq!(
        next_step(RowDue {
            escalated: true,
            ..due(Status::Unknown)
        }),
        Step::LeaveAlone
    );
    for status in [
        Status::NotStarted,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
        Status::Disputed,
    ] {
        // Whatever the row's timers say, a row in these statuses is not reconcile's.
        let all_due = RowDue {
            status,
            lease_expired: true,
            deadline_passed: true,
            escalated: false,
        };
        assert_eq!(next_step(all_due), Step::LeaveAlone, "{status}");
    }
}

#[test]
fn unlinked_webhooks_are_applied_first_only_to_rows_that_wait_for_one() {
    for status in Status::ALL {
        assert_eq!(
            due(status).applies_unlinked_webhooks_first(),
            matches!(status, Status::Accepted | Status::Unknown),
            "{status}"
        );
    }
}

#[test]
fn a_succeeded_object_settles_the_row_with_its_id() {
    for from in [Status::Unknown, Status::Accepted] {
        assert_eq!(
            found_move(&paid(), from, DEADLINE_S),
            LookupMove {
                from,
                event: Event::LookupSucceeded,
                reason: Reason::Reconciled,
                error_code: None,
                external_id: Some("pay_1"),
                deadline_s: None,
                escalate: false,
                records_lookup: true,
            }
        );
    }
}

#[test]
fn a_failed_object_fails_the_row_with_the_providers_code() {
    for from in [Status::Unknown, Status::Accepted] {
        assert_eq!(
            found_move(&refused(), from, DEADLINE_S),
            LookupMove {
                from,
                event: Event::LookupFailed,
                reason: Reason::Reconciled,
                error_code: Some("insufficient_funds"),
                external_id: Some("pay_1"),
                deadline_s: None,
                escalate: false,
                records_lookup: true,
            }
        );
    }
}

#[test]
fn a_pending_object_makes_the_row_accepted_with_a_new_deadline() {
    assert_eq!(
        found_move(&pending(), Status::Unknown, DEADLINE_S),
        LookupMove {
            from: Status::Unknown,
            event: Event::LookupAccepted,
            reason: Reason::Reconciled,
            error_code: None,
            external_id: Some("pay_1"),
            deadline_s: Some(DEADLINE_S),
            escalate: false,
            records_lookup: true,
        }
    );
}

#[test]
fn past_its_deadline_only_one_final_object_settles_an_accepted_row() {
    for found in [paid(), refused()] {
        assert_eq!(
            past_deadline_move(&Lookup::Matches(vec![found.clone()]), DEADLINE_S),
            found_move(&found, Status::Accepted, DEADLINE_S)
        );
    }
    let unknown = LookupMove {
        from: Status::Accepted,
        event: Event::DeadlinePassed,
        reason: Reason::DeadlinePassed,
        error_code: None,
        external_id: None,
        deadline_s: None,
        escalate: false,
        records_lookup: false,
    };
    for lookup in [
        Lookup::Matches(vec![pending()]),
        Lookup::Matches(vec![]),
        Lookup::Matches(vec![paid(), paid()]),
        Lookup::Failed,
        Lookup::Ambiguous(Reason::StatusMoved),
    ] {
        assert_eq!(
            past_deadline_move(&lookup, DEADLINE_S),
            unknown,
            "{lookup:?}"
        );
    }
}

#[test]
fn the_moves_without_an_object_say_why() {
    assert_eq!(
        lease_expired_move(),
        LookupMove {
            from: Status::InProgress,
            event: Event::LeaseExpired,
            reason: Reason::LeaseExpired,
            error_code: None,
            external_id: None,
            deadline_s: None,
            escalate: false,
            records_lookup: false,
        }
    );
    assert_eq!(
        absent_move(),
        LookupMove {
            from: Status::Unknown,
            event: Event::LookupAbsent,
            reason: Reason::LookupProvedAbsence,
            error_code: None,
            external_id: None,
            deadline_s: None,
            escalate: false,
            records_lookup: true,
        }
    );
    assert_eq!(
        escalate_move(Reason::MultipleMatches),
        LookupMove {
            from: Status::Unknown,
            event: Event::Escalate,
            reason: Reason::MultipleMatches,
            error_code: None,
            external_id: None,
            deadline_s: None,
            escalate: true,
            records_lookup: true,
        }
    );
}

#[test]
fn every_move_is_one_the_state_machine_allows() {
    let mut moves = vec![
        lease_expired_move(),
        absent_move(),
        escalate_move(Reason::MultipleMatches),
    ];
    let (p, r, q) = (paid(), refused(), pending());
    for found in [&p, &r, &q] {
        moves.push(found_move(found, Status::Unknown, DEADLINE_S));
    }
    for lookup in [
        Lookup::Matches(vec![p.clone()]),
        Lookup::Matches(vec![r.clone()]),
        Lookup::Matches(vec![q.clone()]),
        Lookup::Failed,
    ] {
        let m = past_deadline_move(&lookup, DEADLINE_S);
        assert!(transition(m.from, m.event).is_ok(), "{lookup:?}: {m:?}");
    }
    for m in moves {
        assert!(transition(m.from, m.event).is_ok(), "{m:?}");
    }
}

#[test]
fn a_lost_claim_is_released_only_when_its_mark_proves_nothing_was_sent() {
    let released = lost_claim_move(SendMark::NotSent);
    assert_eq!(released.from, Status::InProgress);
    assert_eq!(released.reason, Reason::ClaimLostBeforeSend);
    assert_eq!(
        crate::state::transition(released.from, released.event),
        Ok(Status::NotStarted),
        "back to wait for a claim, same key and body"
    );
    assert!(
        !released.records_lookup,
        "no lookup was made, none is recorded"
    );
    // A mark written (or none kept): the request may have left, so it is unknown.
    assert_eq!(lost_claim_move(SendMark::MaybeSent), lease_expired_move());
    assert_eq!(
        crate::state::transition(Status::InProgress, lease_expired_move().event),
        Ok(Status::Unknown)
    );
}
