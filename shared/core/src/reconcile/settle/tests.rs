use super::*;

const CONTRACT: ProviderContract = ProviderContract {
    search_lag_ms: 60_000,
    max_request_ms: 0,
    key_retention_ms: 86_400_000,
    escalate_after_failed_lookups: 3,
};

fn attempt(fence: i64, outcome: Option<AttemptOutcome>) -> AttemptSeen<'static> {
    AttemptSeen {
        fence,
        outcome,
        external_id: None,
        detail: None,
        http_status: None,
        replayed: None,
    }
}

fn facts(failed_lookups_so_far: u32) -> SettleFacts {
    SettleFacts {
        failed_lookups_so_far,
        escalate_after_failed_lookups: 3,
        accepted_earlier: false,
        saved_error_replayed: false,
        payee_changed: false,
    }
}

fn pending() -> Found {
    Found::Pending {
        external_id: "pay_1".into(),
    }
}

fn paid() -> Found {
    Found::Succeeded {
        external_id: "pay_1".into(),
    }
}

#[test]
fn the_newest_final_answer_an_attempt_recorded_settles_it() {
    let succeeded = AttemptSeen {
        external_id: Some("pay_1"),
        ..attempt(1, Some(AttemptOutcome::Succeeded))
    };
    let failed = AttemptSeen {
        external_id: Some("pay_2"),
        detail: Some(AttemptDetail::read(
            Some(AttemptOutcome::Failed),
            "insufficient_funds",
        )),
        ..attempt(2, Some(AttemptOutcome::Failed))
    };
    assert_eq!(
        definitive_attempt(&[succeeded.clone(), failed, attempt(3, None)]),
        Some((
            Found::Failed {
                external_id: "pay_2".into(),
                code: "insufficient_funds".into()
            },
            2
        ))
    );
    assert_eq!(
        definitive_attempt(&[succeeded, attempt(2, Some(AttemptOutcome::Unknown))]),
        Some((paid(), 1))
    );
}

#[test]
fn a_refusal_without_id_or_code_still_settles_with_defaults() {
    assert_eq!(
        definitive_attempt(&[attempt(1, Some(AttemptOutcome::Failed))]),
        Some((
            Found::Failed {
                external_id: String::new(),
                code: "provider_rejected".into()
            },
            1
        ))
    );
}

#[test]
fn no_attempt_proves_an_end_without_a_final_answer_and_an_id() {
    for outcome in [
        None,
        Some(AttemptOutcome::Accepted),
        Some(AttemptOutcome::Unknown),
        Some(AttemptOutcome::NotExecuted),
        Some(AttemptOutcome::VersionConflict),
        // A success is proven only with the effect's id.
        Some(AttemptOutcome::Succeeded),
    ] {
        assert_eq!(
            definitive_attempt(&[attempt(1, outcome)]),
            None,
            "{outcome:?}"
        );
    }
    assert_eq!(definitive_attempt(&[]), None);
}

#[test]
fn the_facts_come_from_the_attempts_and_the_contract() {
    let replayed_5xx = AttemptSeen {
        http_status: Some(503),
        replayed: Some(true),
        ..attempt(1, Some(AttemptOutcome::Unknown))
    };
    let fresh_5xx = AttemptSeen {
        replayed: Some(false),
        ..replayed_5xx.clone()
    };
    let replayed_4xx = AttemptSeen {
        http_status: Some(409),
        ..replayed_5xx.clone()
    };
    let f = SettleFacts::new(
        &[
            fresh_5xx,
            replayed_4xx,
            attempt(2, Some(AttemptOutcome::Accepted)),
        ],
        2,
        CONTRACT,
    );
    assert_eq!(
        f,
        SettleFacts {
            failed_lookups_so_far: 2,
            escalate_after_failed_lookups: 3,
            accepted_earlier: true,
            saved_error_replayed: false,
            payee_changed: false,
        }
    );
    let f = SettleFacts::new(&[replayed_5xx], 0, CONTRACT);
    assert!(f.saved_error_replayed && !f.accepted_earlier);
}

#[test]
fn a_match_resolves_with_it() {
    for found in [
        paid(),
        Found::Failed {
            external_id: "pay_1".into(),
            code: "card_declined".into(),
        },
    ] {
        assert_eq!(
            settle(Verdict::Resolve(found.clone()), facts(2)),
            Settle::Resolve(found)
        );
    }
}

#[test]
fn still_pending_is_accepted_again_until_patience_runs_out() {
    assert_eq!(
        settle(Verdict::Resolve(pending()), facts(1)),
        Settle::AcceptAgain(pending())
    );
    assert_eq!(
        settle(Verdict::Resolve(pending()), facts(2)),
        Settle::Escalate(Reason::StillPending)
    );
}

#[test]
fn absence_sends_the_operation_back_for_a_same_key_retry() {
    assert_eq!(settle(Verdict::Absent, facts(2)), Settle::SendBack);
}

#[test]
fn an_accepted_request_not_found_yet_is_asked_again_then_escalated() {
    let accepted = SettleFacts {
        accepted_earlier: true,
        // An accepted request is never taken for absence, whatever else the key holds.
        saved_error_replayed: true,
        ..facts(1)
    };
    assert_eq!(
        settle(Verdict::Absent, accepted),
        Settle::AskAgain {
            why: AskAgain::AcceptedNotFoundYet,
            failed: true,
            after: Duration::from_secs(2),
        }
    );
    let out_of_patience = SettleFacts {
        failed_lookups_so_far: 2,
        ..accepted
    };
    assert_eq!(
        settle(Verdict::Absent, out_of_patience),
        Settle::Escalate(Reason::AcceptedButNotFound)
    );
}

#[test]
fn a_key_that_replays_a_saved_error_goes_to_a_person_instead_of_a_retry() {
    let saved = SettleFacts {
        saved_error_replayed: true,
        ..facts(0)
    };
    assert_eq!(
        settle(Verdict::Absent, saved),
        Settle::Escalate(Reason::SavedErrorReplayed)
    );
}

#[test]
fn inside_the_search_lag_the_lookup_is_recorded_without_counting_as_failed() {
    assert_eq!(
        settle(Verdict::WaitForSearchLag { wait_ms: 1_500 }, facts(2)),
        Settle::AskAgain {
            why: AskAgain::SearchMayLag,
            failed: false,
            after: Duration::from_millis(1_500),
        }
    );
}

#[test]
fn a_failed_lookup_is_counted_and_asked_again_after_a_backoff() {
    assert_eq!(
        settle(Verdict::RetryLater, facts(0)),
        Settle::AskAgain {
            why: AskAgain::LookupFailed,
            failed: true,
            after: Duration::from_secs(1),
        }
    );
}

#[test]
fn the_verdicts_escalation_is_passed_on() {
    assert_eq!(
        settle(Verdict::Escalate(Reason::MultipleMatches), facts(0)),
        Settle::Escalate(Reason::MultipleMatches)
    );
}

#[test]
fn the_backoff_doubles_up_to_a_minute() {
    let secs: Vec<u64> = (0..9).map(|n| lookup_backoff(n).as_secs()).collect();
    assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    assert_eq!(lookup_backoff(u32::MAX), MAX_LOOKUP_BACKOFF);
}

#[test]
fn a_payment_refused_for_a_changed_payee_is_never_sent_back() {
    let refused = AttemptSeen {
        http_status: Some(409),
        detail: Some(AttemptDetail::Because {
            reason: crate::outcome::PAYEE_CHANGED_AFTER_UNCERTAIN,
        }),
        ..attempt(2, Some(AttemptOutcome::Unknown))
    };
    let f = SettleFacts::new(
        &[attempt(1, Some(AttemptOutcome::Unknown)), refused],
        0,
        CONTRACT,
    );
    assert!(f.payee_changed);
    assert_eq!(
        settle(Verdict::Absent, f),
        Settle::Escalate(Reason::BeneficiaryChanged)
    );
    // The first attempt paid after all: that is what happened.
    assert_eq!(settle(Verdict::Resolve(paid()), f), Settle::Resolve(paid()));
}

#[test]
fn an_unknown_operation_is_decided_once_from_what_was_learnt() {
    // An attempt's final answer settles it without a lookup.
    let recorded = UnknownEvidence::Recorded {
        found: paid(),
        fence: 2,
    };
    assert_eq!(settle_unknown(&recorded), Settle::Resolve(paid()));
    // Otherwise the lookup is judged and settled as `judge` and `settle` say.
    let looked_up = |lookup: Lookup, failed_lookups_so_far| UnknownEvidence::LookedUp {
        lookup,
        ages: AttemptAges {
            newest_ms: Some(120_000),
            newest_start_ms: Some(120_000),
            oldest_ms: Some(120_000),
            failed_lookups_so_far,
        },
        contract: CONTRACT,
        facts: facts(failed_lookups_so_far),
    };
    assert_eq!(
        settle_unknown(&looked_up(Lookup::Matches(vec![]), 0)),
        Settle::SendBack
    );
    assert_eq!(
        settle_unknown(&looked_up(Lookup::Failed, 2)),
        Settle::Escalate(Reason::LookupFailedRepeatedly)
    );
    assert_eq!(
        settle_unknown(&looked_up(Lookup::Matches(vec![pending()]), 0)),
        Settle::AcceptAgain(pending())
    );
}

#[test]
fn each_decision_names_its_move_of_the_unknown_row() {
    use crate::{Event, Status};
    let moved = |s: Settle| {
        s.lookup_move(300)
            .map(|m| (m.from, m.event, m.reason, m.escalate))
    };
    assert_eq!(
        moved(Settle::Resolve(paid())),
        Some((
            Status::Unknown,
            Event::LookupSucceeded,
            Reason::Reconciled,
            false
        ))
    );
    let pending_move = Settle::AcceptAgain(pending());
    let step = pending_move.lookup_move(300).unwrap();
    assert_eq!(
        (step.event, step.deadline_s),
        (Event::LookupAccepted, Some(300))
    );
    assert_eq!(
        moved(Settle::SendBack),
        Some((
            Status::Unknown,
            Event::LookupAbsent,
            Reason::LookupProvedAbsence,
            false
        ))
    );
    assert_eq!(
        moved(Settle::Escalate(Reason::MultipleMatches)),
        Some((
            Status::Unknown,
            Event::Escalate,
            Reason::MultipleMatches,
            true
        ))
    );
    assert_eq!(
        moved(Settle::AskAgain {
            why: AskAgain::LookupFailed,
            failed: true,
            after: lookup_backoff(0),
        }),
        None
    );
}
