//! Where a provider's answer moves the claimed row: from `in_progress` at the claim's
//! fence, by the event the answer proves, with what the row keeps of the answer.

use crate::{Event, Outcome, Reason};

/// The fenced move that records one answer, as plain values: the worker turns it into
/// the store's transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerMove<'a> {
    pub event: Event,
    pub reason: Option<Reason>,
    pub error_code: Option<&'a str>,
    pub external_id: Option<&'a str>,
    /// An accepted request: the row waits this many seconds for a final answer.
    pub deadline_s: Option<u32>,
    /// A person decides: the row becomes unknown with an open escalation.
    pub escalate: bool,
    /// The row keeps the provider's request id (the provider answered the request).
    pub keeps_request_id: bool,
    /// The operation's result is the attempt's allow-listed summary of the answer.
    pub keeps_result: bool,
}

/// A move by `event` that keeps nothing of the answer: each answer names what it adds.
fn keeping_nothing<'a>(event: Event) -> AnswerMove<'a> {
    AnswerMove {
        event,
        reason: None,
        error_code: None,
        external_id: None,
        deadline_s: None,
        escalate: false,
        keeps_request_id: false,
        keeps_result: false,
    }
}

/// The move for `outcome`; an accepted request waits `accepted_deadline_s`.
pub fn answer_move(outcome: &Outcome, accepted_deadline_s: u32) -> AnswerMove<'_> {
    let ambiguous = keeping_nothing(Event::ProviderAmbiguous);
    match outcome {
        Outcome::Succeeded { external_id } => AnswerMove {
            event: Event::ProviderSucceeded,
            external_id: Some(external_id),
            keeps_request_id: true,
            keeps_result: true,
            ..ambiguous
        },
        Outcome::Failed { code } => AnswerMove {
            event: Event::ProviderFailed,
            reason: Some(Reason::ProviderRejected),
            error_code: Some(code),
            keeps_request_id: true,
            keeps_result: true,
            ..ambiguous
        },
        Outcome::Accepted { external_id } => AnswerMove {
            event: Event::ProviderAccepted,
            external_id: external_id.as_deref(),
            deadline_s: Some(accepted_deadline_s),
            keeps_request_id: true,
            keeps_result: true,
            ..ambiguous
        },
        // The approved change no longer applies: cancelled, with the broken precondition as
        // both reason and code, and what the provider said about it.
        Outcome::Conflict { on, .. } => AnswerMove {
            event: Event::ProviderConflict,
            reason: Some(on.reason()),
            error_code: Some(on.code()),
            keeps_result: true,
            ..ambiguous
        },
        Outcome::NotExecuted { reason } => AnswerMove {
            event: Event::ProviderNotSent,
            reason: Some(*reason),
            ..ambiguous
        },
        Outcome::Unknown { reason, escalate } => AnswerMove {
            reason: Some(*reason),
            escalate: *escalate,
            ..ambiguous
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{transition, Precondition, Status};

    const DEADLINE_S: u32 = 900;

    #[test]
    fn the_base_of_every_move_keeps_nothing() {
        let m = keeping_nothing(Event::ProviderAmbiguous);
        let kept = (m.reason, m.error_code, m.external_id, m.deadline_s);
        assert_eq!(kept, (None, None, None, None));
        let flags = (m.escalate, m.keeps_request_id, m.keeps_result);
        assert_eq!(flags, (false, false, false));
    }

    /// A move by `event` for an answer the provider gave to the request: the row keeps
    /// its request id and its result.
    fn answered<'a>(event: Event) -> AnswerMove<'a> {
        AnswerMove {
            keeps_request_id: true,
            keeps_result: true,
            ..keeping_nothing(event)
        }
    }

    #[test]
    fn a_success_settles_with_its_id_and_keeps_the_answer() {
        let outcome = Outcome::Succeeded {
            external_id: "pay_1".into(),
        };
        assert_eq!(
            answer_move(&outcome, DEADLINE_S),
            AnswerMove {
                external_id: Some("pay_1"),
                ..answered(Event::ProviderSucceeded)
            }
        );
    }

    #[test]
    fn a_refusal_fails_with_the_providers_code() {
        let outcome = Outcome::Failed {
            code: "insufficient_funds".into(),
        };
        assert_eq!(
            answer_move(&outcome, DEADLINE_S),
            AnswerMove {
                reason: Some(Reason::ProviderRejected),
                error_code: Some("insufficient_funds"),
                ..answered(Event::ProviderFailed)
            }
        );
    }

    #[test]
    fn an_accepted_request_waits_for_its_deadline_with_or_without_an_id() {
        for external_id in [Some("pay_1"), None] {
            let outcome = Outcome::Accepted {
                external_id: external_id.map(str::to_owned),
            };
            assert_eq!(
                answer_move(&outcome, DEADLINE_S),
                AnswerMove {
                    external_id,
                    deadline_s: Some(DEADLINE_S),
                    ..answered(Event::ProviderAccepted)
                }
            );
        }
    }

    #[test]
    fn a_conflict_cancels_with_the_broken_precondition() {
        for on in [
            Precondition::Version,
            Precondition::Status,
            Precondition::Payee,
        ] {
            let outcome = Outcome::Conflict {
                on,
                current: Some("7".into()),
            };
            assert_eq!(
                answer_move(&outcome, DEADLINE_S),
                AnswerMove {
                    reason: Some(on.reason()),
                    error_code: Some(on.code()),
                    keeps_result: true,
                    ..keeping_nothing(Event::ProviderConflict)
                }
            );
        }
    }

    #[test]
    fn a_request_that_never_left_goes_back_with_its_reason() {
        let outcome = Outcome::NotExecuted {
            reason: Reason::NotSent,
        };
        assert_eq!(
            answer_move(&outcome, DEADLINE_S),
            AnswerMove {
                reason: Some(Reason::NotSent),
                ..keeping_nothing(Event::ProviderNotSent)
            }
        );
    }

    #[test]
    fn an_ambiguous_answer_is_unknown_and_escalated_only_when_it_says_so() {
        for escalate in [false, true] {
            let outcome = Outcome::Unknown {
                reason: Reason::Timeout,
                escalate,
            };
            assert_eq!(
                answer_move(&outcome, DEADLINE_S),
                AnswerMove {
                    reason: Some(Reason::Timeout),
                    escalate,
                    ..keeping_nothing(Event::ProviderAmbiguous)
                }
            );
        }
    }

    #[test]
    fn every_answer_is_a_move_the_state_machine_allows_from_in_progress() {
        let outcomes = [
            Outcome::Succeeded {
                external_id: "pay_1".into(),
            },
            Outcome::Failed { code: "x".into() },
            Outcome::Accepted { external_id: None },
            Outcome::Conflict {
                on: Precondition::Version,
                current: None,
            },
            Outcome::NotExecuted {
                reason: Reason::Http(429),
            },
            Outcome::Unknown {
                reason: Reason::Http(503),
                escalate: false,
            },
        ];
        for outcome in &outcomes {
            let event = answer_move(outcome, DEADLINE_S).event;
            assert!(transition(Status::InProgress, event).is_ok(), "{outcome:?}");
        }
    }
}
