//! Walks every (status, event) pair against the table of docs/design.md, written out here a
//! second time on purpose: the match in `transition` and this list must agree.

use super::*;
use Event as E;
use Status as S;

const TABLE: &[(Status, Event, Status)] = &[
    (S::NotStarted, E::Claim, S::InProgress),
    (S::NotStarted, E::CancelBeforeStart, S::Cancelled),
    (S::InProgress, E::ProviderSucceeded, S::Succeeded),
    (S::InProgress, E::ProviderFailed, S::Failed),
    (S::InProgress, E::ProviderAccepted, S::Accepted),
    (S::InProgress, E::ProviderAmbiguous, S::Unknown),
    (S::InProgress, E::LeaseExpired, S::Unknown),
    (S::InProgress, E::ProviderNotSent, S::NotStarted),
    (S::InProgress, E::ProviderConflict, S::Cancelled),
    (S::Accepted, E::WebhookSucceeded, S::Succeeded),
    (S::Accepted, E::WebhookFailed, S::Failed),
    (S::Accepted, E::LookupSucceeded, S::Succeeded),
    (S::Accepted, E::LookupFailed, S::Failed),
    (S::InProgress, E::WebhookSucceeded, S::Succeeded),
    (S::InProgress, E::WebhookFailed, S::Failed),
    (S::Unknown, E::WebhookSucceeded, S::Succeeded),
    (S::Unknown, E::WebhookFailed, S::Failed),
    (S::Accepted, E::DeadlinePassed, S::Unknown),
    (S::Unknown, E::LookupSucceeded, S::Succeeded),
    (S::Unknown, E::LookupFailed, S::Failed),
    (S::Unknown, E::LookupAccepted, S::Accepted),
    (S::Unknown, E::LookupAbsent, S::NotStarted),
    (S::Unknown, E::Escalate, S::Unknown),
    (S::Unknown, E::OperatorSucceeded, S::Succeeded),
    (S::Unknown, E::OperatorFailed, S::Failed),
    (S::Unknown, E::OperatorCancelled, S::Cancelled),
    (S::Accepted, E::OperatorSucceeded, S::Succeeded),
    (S::Accepted, E::OperatorFailed, S::Failed),
    (S::Accepted, E::OperatorCancelled, S::Cancelled),
    (S::NotStarted, E::OperatorDispute, S::Disputed),
    (S::InProgress, E::OperatorDispute, S::Disputed),
    (S::Accepted, E::OperatorDispute, S::Disputed),
    (S::Unknown, E::OperatorDispute, S::Disputed),
    (S::NotStarted, E::Escalate, S::NotStarted),
    (S::Disputed, E::OperatorSucceeded, S::Succeeded),
    (S::Disputed, E::OperatorFailed, S::Failed),
    (S::Disputed, E::OperatorCancelled, S::Cancelled),
    (S::Succeeded, E::OperatorSucceeded, S::Succeeded),
];

#[test]
fn every_status_event_pair_matches_the_table() {
    let mut allowed = 0;
    for from in Status::ALL {
        for event in Event::ALL {
            let expected = TABLE
                .iter()
                .find(|(f, e, _)| *f == from && *e == event)
                .map(|(_, _, to)| *to);
            match expected {
                Some(to) => {
                    assert_eq!(
                        transition(from, event),
                        Ok(to),
                        "{from} --{event:?}--> should be {to}"
                    );
                    allowed += 1;
                }
                None => assert_eq!(
                    transition(from, event),
                    Err(Refused { from, event }),
                    "{from} --{event:?}--> should be refused"
                ),
            }
        }
    }
    assert_eq!(allowed, TABLE.len(), "the table lists a pair twice");
}

#[test]
fn final_states_absorb_every_worker_event() {
    for from in Status::ALL.into_iter().filter(|s| s.is_final()) {
        for event in Event::ALL.into_iter().filter(|e| !e.is_operator_decision()) {
            assert!(
                transition(from, event).is_err(),
                "{from} must not move on {event:?}"
            );
        }
    }
}

#[test]
fn only_a_person_moves_a_final_row_and_never_away_from_what_the_provider_settled() {
    for from in [S::Succeeded, S::Failed, S::Cancelled] {
        for event in Event::ALL {
            if let Ok(to) = transition(from, event) {
                assert!(event.is_operator_decision(), "{from} --{event:?}-->");
                assert_eq!(
                    to, from,
                    "an operator confirms a settled row, never changes it"
                );
            }
        }
    }
}

#[test]
fn only_a_lookup_proving_absence_leads_from_unknown_back_to_a_call() {
    let back_to_start: Vec<_> = Event::ALL
        .into_iter()
        .filter(|e| transition(S::Unknown, *e) == Ok(S::NotStarted))
        .collect();
    assert_eq!(back_to_start, vec![E::LookupAbsent]);
    let to_progress: Vec<_> = Status::ALL
        .into_iter()
        .flat_map(|s| Event::ALL.into_iter().map(move |e| (s, e)))
        .filter(|(s, e)| transition(*s, *e) == Ok(S::InProgress))
        .collect();
    assert_eq!(
        to_progress,
        vec![(S::NotStarted, E::Claim)],
        "only a claim starts a provider call"
    );
}

#[test]
fn status_names_round_trip() {
    for s in Status::ALL {
        assert_eq!(Status::parse(s.as_str()), Some(s));
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
    assert_eq!(Status::parse("escalated"), None);
}
