//! What a provider event means for an operation row, decided without I/O: which events
//! are status reports at all, whether the event is about the same thing the row is about,
//! whether the state machine lets it move the row, and what a disputed or escalated row
//! overrides ([`decide_linked`]). The store's transactional code (`fleet_store`'s
//! webhooks module) only carries the decision out.

use crate::catalogue::{Action, CATALOGUE};
use crate::{Event, Reason, Status};
use serde_json::Value;

/// The object status an event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    Succeeded,
    Failed,
    /// Not final (`payment.pending`, an envelope's `created`): heard, never moves a row.
    Pending,
}

/// An event type as the consumer understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `<object>.<status>` of an action whose catalogue entry names those events: a
    /// report on the effect of an operation of `action`.
    Status { action: Action, reported: Reported },
    /// Anything else (`deal.*`, a type added by the provider later): stored for
    /// deduplication, never applied.
    Unsupported,
}

impl EventKind {
    pub fn of(event_type: &str) -> EventKind {
        let Some((object, status)) = event_type.split_once('.') else {
            return EventKind::Unsupported;
        };
        for spec in CATALOGUE {
            let Some(hooks) = spec.webhook.filter(|w| w.object == object) else {
                continue;
            };
            let reported = if status == hooks.succeeded {
                Reported::Succeeded
            } else if status == hooks.failed {
                Reported::Failed
            } else if hooks.pending.contains(&status) {
                Reported::Pending
            } else {
                return EventKind::Unsupported;
            };
            return EventKind::Status {
                action: spec.action,
                reported,
            };
        }
        EventKind::Unsupported
    }

    /// The member of the reported object that echoes our operation id.
    pub fn reference_field(self) -> &'static str {
        match self {
            EventKind::Status { action, .. } => action
                .spec()
                .webhook
                .map_or("reference", |w| w.reference_field),
            EventKind::Unsupported => "reference",
        }
    }
}

/// What to do with a linked status report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookDecision {
    /// Move the row with this event (the state machine allows it).
    Apply(Event),
    /// Nothing to change: a non-final report, or a final one the row already agrees with.
    Ignore,
    /// The event contradicts the row: record it and escalate the row, never apply it.
    Escalate(Reason),
    /// The row is disputed, so an operator owns it: record the event, touch nothing.
    NoteOnDisputed,
    /// The row is escalated, so a person was asked to decide: the event is evidence for
    /// them, recorded in the history, and moves nothing.
    NoteOnEscalated,
}

impl Reported {
    /// The error code an applied report records: the provider's failure code, for a
    /// failure only.
    pub fn error_code(self, failure_code: Option<&str>) -> Option<&str> {
        match self {
            Reported::Failed => failure_code,
            Reported::Succeeded | Reported::Pending => None,
        }
    }
}

/// What the linked row adds to [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkedRow {
    pub status: Status,
    /// A person was asked to decide (`escalated_at` is set).
    pub escalated: bool,
}

/// The decision for a status report linked to `row`, given whether it is about the row's
/// effect (`identity`, from [`check_identity`]). The row overrides [`decide`] twice:
/// an event about something else escalates the row with the mismatch, except a disputed
/// row, which is an operator's and only notes it; and an event that would move an
/// escalated row is only noted, since escalated means hands off.
pub fn decide_linked(
    row: LinkedRow,
    identity: Result<(), Reason>,
    reported: Reported,
) -> WebhookDecision {
    let decision = match identity {
        Ok(()) => decide(row.status, reported),
        Err(_) if row.status == Status::Disputed => WebhookDecision::NoteOnDisputed,
        Err(mismatch) => WebhookDecision::Escalate(mismatch),
    };
    match decision {
        WebhookDecision::Apply(_) if row.escalated => WebhookDecision::NoteOnEscalated,
        decision => decision,
    }
}

/// The event's status report against the row's status. Exhaustive on purpose: a new
/// status or report must be decided here, not fall through a wildcard.
pub fn decide(status: Status, reported: Reported) -> WebhookDecision {
    use Status as S;
    use WebhookDecision as D;
    let event = match reported {
        Reported::Succeeded => Event::WebhookSucceeded,
        Reported::Failed => Event::WebhookFailed,
        Reported::Pending => {
            return match status {
                S::InProgress | S::Accepted | S::Unknown => D::Ignore,
                // A late `pending` never regresses a final row.
                S::Succeeded | S::Failed | S::Cancelled => D::Ignore,
                S::Disputed => D::NoteOnDisputed,
                S::NotStarted => D::Escalate(BEFORE_CLAIM),
            };
        }
    };
    match status {
        S::InProgress | S::Accepted | S::Unknown => D::Apply(event),
        S::Succeeded if reported == Reported::Succeeded => D::Ignore,
        S::Failed if reported == Reported::Failed => D::Ignore,
        S::Succeeded | S::Failed | S::Cancelled => D::Escalate(CONTRADICTS_FINAL),
        S::Disputed => D::NoteOnDisputed,
        // The provider holds an object for an operation nobody has claimed (or whose
        // absence a lookup proved): our belief is wrong somewhere.
        S::NotStarted => D::Escalate(BEFORE_CLAIM),
    }
}

pub const CONTRADICTS_FINAL: Reason = Reason::WebhookContradictsFinal;
pub const BEFORE_CLAIM: Reason = Reason::WebhookBeforeClaim;
pub const ON_DISPUTED: Reason = Reason::WebhookOnDisputed;
/// Why an event that would have moved an escalated row only went to its history.
pub const ON_ESCALATED: Reason = Reason::OperationEscalated;
/// Why an event [`decide`] applied was escalated instead: the state machine refused it,
/// or the row moved, although the row was held. Never expected; recorded for an
/// operator rather than guessed at.
pub const NOT_APPLICABLE: Reason = Reason::WebhookNotApplicable;

/// What the row says the effect is, for [`check_identity`].
#[derive(Debug, Clone, Copy)]
pub struct RowIdentity<'a> {
    /// The reference the provider echoes: the operation's stored idempotency key.
    pub reference: &'a str,
    pub provider: &'a str,
    pub action: &'a str,
    pub external_id: Option<&'a str>,
    pub payload: &'a Value,
}

/// The identifying fields of the reported object.
#[derive(Debug, Clone, Copy)]
pub struct ObjectIdentity<'a> {
    pub id: Option<&'a str>,
    pub reference: Option<&'a str>,
    pub amount_minor: Option<i64>,
    pub currency: Option<&'a str>,
}

/// Is the event about this operation's effect? A second object for one operation (other
/// id), another reference, another amount or currency, an object of another action or
/// an event from another provider must never settle the row: `Err` names the mismatch and the row is escalated.
pub fn check_identity(
    action: Action,
    provider: &str,
    row: RowIdentity<'_>,
    object: ObjectIdentity<'_>,
) -> Result<(), Reason> {
    if row.provider != provider {
        return Err(Reason::WebhookProviderMismatch);
    }
    if row.action != action.wire_name() {
        return Err(Reason::WebhookActionMismatch);
    }
    if let Some(reference) = object.reference {
        if reference != row.reference {
            return Err(Reason::WebhookReferenceMismatch);
        }
    }
    if let (Some(known), Some(reported)) = (row.external_id, object.id) {
        if known != reported {
            return Err(Reason::WebhookExternalIdMismatch);
        }
    }
    if let (Some(amount), Some(expected)) = (
        object.amount_minor,
        row.payload.get("amount_minor").and_then(Value::as_i64),
    ) {
        if amount != expected {
            return Err(Reason::WebhookAmountMismatch);
        }
    }
    if let (Some(currency), Some(expected)) = (
        object.currency,
        row.payload.get("currency").and_then(Value::as_str),
    ) {
        if currency != expected {
            return Err(Reason::WebhookCurrencyMismatch);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transition;
    use serde_json::json;

    const REPORTS: [Reported; 3] = [Reported::Succeeded, Reported::Failed, Reported::Pending];

    #[test]
    fn an_applied_event_is_always_an_edge_of_the_state_machine_to_a_final_status() {
        for status in Status::ALL {
            for reported in REPORTS {
                if let WebhookDecision::Apply(event) = decide(status, reported) {
                    let to = transition(status, event)
                        .unwrap_or_else(|r| panic!("{status} {reported:?}: {r}"));
                    assert!(to.is_final());
                }
            }
        }
    }

    #[test]
    fn a_final_report_the_state_machine_allows_is_never_left_unapplied() {
        for status in Status::ALL {
            for (reported, event) in [
                (Reported::Succeeded, Event::WebhookSucceeded),
                (Reported::Failed, Event::WebhookFailed),
            ] {
                if transition(status, event).is_ok() {
                    assert_eq!(
                        decide(status, reported),
                        WebhookDecision::Apply(event),
                        "{status}"
                    );
                }
            }
        }
    }

    #[test]
    fn final_rows_are_never_moved_and_contradictions_escalate() {
        use WebhookDecision as D;
        let contradicts = D::Escalate(CONTRADICTS_FINAL);
        let decided = [
            (Status::Succeeded, Reported::Succeeded, D::Ignore),
            (Status::Succeeded, Reported::Pending, D::Ignore),
            (Status::Succeeded, Reported::Failed, contradicts),
            (Status::Failed, Reported::Succeeded, contradicts),
            (Status::Cancelled, Reported::Succeeded, contradicts),
            (
                Status::NotStarted,
                Reported::Succeeded,
                D::Escalate(BEFORE_CLAIM),
            ),
        ];
        for (status, reported, decision) in decided {
            assert_eq!(decide(status, reported), decision, "{status} {reported:?}");
        }
        for reported in REPORTS {
            assert_eq!(decide(Status::Disputed, reported), D::NoteOnDisputed);
        }
        assert_eq!(decide(Status::Accepted, Reported::Pending), D::Ignore);
    }

    fn linked(status: Status, escalated: bool) -> LinkedRow {
        LinkedRow { status, escalated }
    }

    #[test]
    fn an_event_about_this_rows_effect_is_decided_by_the_state_machine() {
        for status in Status::ALL {
            for reported in REPORTS {
                assert_eq!(
                    decide_linked(linked(status, false), Ok(()), reported),
                    decide(status, reported),
                    "{status} {reported:?}"
                );
            }
        }
    }

    #[test]
    fn an_event_about_something_else_escalates_except_on_a_disputed_row() {
        for escalated in [false, true] {
            for status in Status::ALL {
                for reported in REPORTS {
                    let expected = if status == Status::Disputed {
                        WebhookDecision::NoteOnDisputed
                    } else {
                        WebhookDecision::Escalate(Reason::WebhookAmountMismatch)
                    };
                    assert_eq!(
                        decide_linked(
                            linked(status, escalated),
                            Err(Reason::WebhookAmountMismatch),
                            reported
                        ),
                        expected,
                        "{status} {reported:?} escalated={escalated}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_escalated_row_is_never_moved_by_an_event_only_noted() {
        for status in Status::ALL {
            for reported in REPORTS {
                let decision = decide_linked(linked(status, true), Ok(()), reported);
                match decide(status, reported) {
                    WebhookDecision::Apply(_) => {
                        assert_eq!(decision, WebhookDecision::NoteOnEscalated, "{status}")
                    }
                    // What would not have moved the row is decided as for any row.
                    other => assert_eq!(decision, other, "{status} {reported:?}"),
                }
            }
        }
        assert_eq!(
            decide_linked(linked(Status::Unknown, true), Ok(()), Reported::Succeeded),
            WebhookDecision::NoteOnEscalated
        );
    }

    #[test]
    fn only_a_failure_records_the_providers_failure_code() {
        assert_eq!(
            Reported::Failed.error_code(Some("card_declined")),
            Some("card_declined")
        );
        assert_eq!(Reported::Failed.error_code(None), None);
        assert_eq!(Reported::Succeeded.error_code(Some("card_declined")), None);
        assert_eq!(Reported::Pending.error_code(Some("card_declined")), None);
    }

    #[test]
    fn event_types_map_to_families_and_reports() {
        for (event_type, action, reported) in [
            (
                "payment.succeeded",
                Action::PaymentCreate,
                Reported::Succeeded,
            ),
            ("refund.failed", Action::RefundCreate, Reported::Failed),
            ("payment.pending", Action::PaymentCreate, Reported::Pending),
        ] {
            let expected = EventKind::Status { action, reported };
            assert_eq!(EventKind::of(event_type), expected, "{event_type}");
        }
        assert_eq!(
            EventKind::of("payment.succeeded").reference_field(),
            "reference"
        );
        for other in [
            "deal.created",
            "deal.updated",
            "payment.updated",
            "",
            "payment",
            "PAYMENT.SUCCEEDED",
        ] {
            assert_eq!(EventKind::of(other), EventKind::Unsupported, "{other}");
        }
    }

    #[test]
    fn identity_must_match_the_row_in_every_reported_field() {
        let payload = json!({"amount_minor": 1250000, "currency": "KZT"});
        let row = RowIdentity {
            reference: "op_A",
            provider: "payments",
            action: "payment.create",
            external_id: Some("pay_1"),
            payload: &payload,
        };
        let good = ObjectIdentity {
            id: Some("pay_1"),
            reference: Some("op_A"),
            amount_minor: Some(1250000),
            currency: Some("KZT"),
        };
        let payment = |row, object| check_identity(Action::PaymentCreate, "payments", row, object);
        assert_eq!(payment(row, good), Ok(()));
        assert_eq!(
            check_identity(Action::RefundCreate, "payments", row, good),
            Err(Reason::WebhookActionMismatch)
        );
        assert_eq!(
            check_identity(Action::PaymentCreate, "crm", row, good),
            Err(Reason::WebhookProviderMismatch)
        );
        type Change = fn(&mut ObjectIdentity<'static>);
        let one_field_off: [(Change, Reason); 4] = [
            (
                |o| o.reference = Some("op_B"),
                Reason::WebhookReferenceMismatch,
            ),
            (|o| o.id = Some("pay_2"), Reason::WebhookExternalIdMismatch),
            (|o| o.amount_minor = Some(1), Reason::WebhookAmountMismatch),
            (
                |o| o.currency = Some("USD"),
                Reason::WebhookCurrencyMismatch,
            ),
        ];
        for (change, mismatch) in one_field_off {
            let mut other = good;
            change(&mut other);
            assert_eq!(payment(row, other), Err(mismatch), "{other:?}");
        }
        // The row has no external id yet (the execute worker has not recorded it): fine.
        let fresh = RowIdentity {
            external_id: None,
            ..row
        };
        let unknown_id = ObjectIdentity {
            id: Some("pay_9"),
            ..good
        };
        assert_eq!(payment(fresh, unknown_id), Ok(()));
    }
}
