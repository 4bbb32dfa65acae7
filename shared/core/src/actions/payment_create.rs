//! `payment.create`: pay an invoice to a beneficiary, at the payments provider, under an
//! idempotency key the provider keeps for its retention window.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, Subject, Target, ToolText, WebhookSpec,
};
use crate::actions::search::read_search;
use crate::catalogue::provider_spec;
use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::lookup::{Found, Reading};
use crate::members::arguments::Proposal;
use crate::members::checks::{check_id, check_money, check_text};
use crate::members::schemas::{amount_minor, currency, identifier, text};
use crate::money::format_amount;
use crate::outcome::{classify_keyed_create, CallResult, Outcome};

/// `payment.create`: pay an invoice to a beneficiary.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct PaymentPayload {
    /// The invoice this payment settles; also the payment's reference at the provider.
    #[schemars(schema_with = "identifier")]
    pub invoice_id: String,
    /// Who is paid.
    #[schemars(schema_with = "identifier")]
    pub beneficiary_id: String,
    /// The amount in the currency's minor unit (12,500.00 KZT is 1250000), an integer.
    #[schemars(schema_with = "amount_minor")]
    pub amount_minor: i64,
    /// An active ISO 4217 code, upper case.
    #[schemars(schema_with = "currency")]
    pub currency: String,
    /// The beneficiary's name as the invoice gives it: the provider's directory checks it
    /// against the account's holder (`match`, `close_match`, `no_match`, `not_possible`),
    /// and the approver sees the result. Optional; without it the check is
    /// `not_possible`.
    #[serde(default, deserialize_with = "given_text")]
    #[schemars(schema_with = "text")]
    pub beneficiary_name: Option<String>,
}

/// An optional text member that is a string when present: `null` is refused, as the
/// schema refuses it, rather than read as absent.
fn given_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// Classifies one call to the reference payments API (docs/protocol.md; refunds share it).
pub fn classify_payment(call: &CallResult) -> Outcome {
    classify_keyed_create(call, Found::from_object)
}

impl ActionPayload for PaymentPayload {
    type Proposal = Proposal<PaymentPayload>;

    fn check(&self) -> Result<(), IntentError> {
        check_id("payload.invoice_id", &self.invoice_id)?;
        check_id("payload.beneficiary_id", &self.beneficiary_id)?;
        if let Some(name) = &self.beneficiary_name {
            check_text("payload.beneficiary_name", name)?;
        }
        check_money(self.amount_minor, &self.currency)
    }

    fn describe(&self, _target: Option<&str>) -> Option<Headline> {
        let amount = format_amount(self.amount_minor, &self.currency)?;
        let headline = Headline::new(format!(
            "Pay {amount} to {} for invoice {}",
            self.beneficiary_id, self.invoice_id
        ));
        // The agent's name for the payee is free text: quoted after the sentence.
        Some(match &self.beneficiary_name {
            Some(name) => headline.quoting("beneficiary_name", &**name),
            None => headline,
        })
    }

    fn classify(&self, call: &CallResult, _subject: &Subject<'_>) -> Outcome {
        classify_payment(call)
    }

    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        read_search(subject, via, objects, "reference", Found::from_object)
    }
}

pub const SPEC: ActionSpec = ActionSpec {
    action: Action::PaymentCreate,
    wire_name: "payment.create",
    provider: provider_spec::PAYMENTS.name,
    target: Target::Optional,
    effect: Effect::KeyedCreate,
    has_amount: true,
    payee: Some("beneficiary_id"),
    objects: &[],
    webhook: Some(WebhookSpec {
        object: "payment",
        succeeded: "succeeded",
        failed: "failed",
        pending: &["pending"],
        reference_field: "reference",
    }),
    tool: ToolText {
        name: "payment_create",
        title: "Propose a payment",
        what:
            "Propose paying an invoice to a beneficiary (payment.create at the payments provider).",
    },
    behaviour: Behaviour::of::<PaymentPayload>(),
};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::attempt::AttemptOutcome;
    use crate::outcome::{
        answer, settle_conflict, unknown, NoAnswerKind, Precondition, PAYEE_CHANGED_AFTER_UNCERTAIN,
    };
    use crate::Reason;

    #[test]
    fn a_changed_payee_is_a_conflict_on_the_payee_not_a_retry() {
        let changed = json!({"error": {"type": "precondition_failed",
                                       "code": "beneficiary_changed", "current_version": 4}});
        let outcome = classify_payment(&answer(409, false, changed));
        assert_eq!(
            outcome,
            Outcome::Conflict {
                on: Precondition::Payee,
                current: Some("4".into())
            }
        );
        assert_eq!(Precondition::Payee.code(), "beneficiary_changed");
        assert_eq!(outcome.label(), "version_conflict");
        // Another 409 is still the key in flight: unknown, looked up.
        let other = json!({"error": {"type": "precondition_failed", "code": "other"}});
        assert!(matches!(
            classify_payment(&answer(409, false, other)),
            Outcome::Unknown { .. }
        ));
        // After an attempt whose fate is unknown, the first request may have paid: looked up.
        assert_eq!(
            settle_conflict(outcome, &[Some(AttemptOutcome::Unknown)]),
            unknown(PAYEE_CHANGED_AFTER_UNCERTAIN)
        );
    }

    #[test]
    fn created_payment_statuses_map_to_final_or_accepted() {
        assert_eq!(
            classify_payment(&answer(
                201,
                false,
                json!({"id": "pay_1", "status": "succeeded"})
            )),
            Outcome::Succeeded {
                external_id: "pay_1".into()
            }
        );
        assert_eq!(
            classify_payment(&answer(
                201,
                true,
                json!({"id": "pay_1", "status": "pending"})
            )),
            Outcome::Accepted {
                external_id: Some("pay_1".into())
            }
        );
        assert_eq!(
            classify_payment(&answer(
                201,
                false,
                json!({"id": "pay_1", "status": "failed"})
            )),
            Outcome::Failed {
                code: "payment_failed".into()
            }
        );
    }

    #[test]
    fn business_rejection_is_failed_with_its_code() {
        let body = json!({"error": {"type": "payment_rejected", "code": "account_closed"}});
        assert_eq!(
            classify_payment(&answer(402, false, body)),
            Outcome::Failed {
                code: "account_closed".into()
            }
        );
    }

    #[test]
    fn server_errors_timeouts_and_in_flight_keys_are_unknown() {
        for status in [500, 502, 503, 504] {
            assert!(matches!(
                classify_payment(&answer(status, false, Value::Null)),
                Outcome::Unknown {
                    escalate: false,
                    ..
                }
            ));
        }
        assert_eq!(
            classify_payment(&answer(500, true, Value::Null)),
            Outcome::Unknown {
                reason: Reason::HttpReplayed(500),
                escalate: false
            }
        );
        let in_use =
            json!({"error": {"type": "idempotency_error", "code": "idempotency_key_in_use"}});
        assert!(matches!(
            classify_payment(&answer(409, false, in_use)),
            Outcome::Unknown {
                escalate: false,
                ..
            }
        ));
        for kind in [NoAnswerKind::Timeout, NoAnswerKind::Reset] {
            assert!(matches!(
                classify_payment(&CallResult::NoAnswer { kind }),
                Outcome::Unknown {
                    escalate: false,
                    ..
                }
            ));
        }
        assert!(matches!(
            classify_payment(&answer(201, false, json!({}))),
            Outcome::Unknown { .. }
        ));
    }

    #[test]
    fn key_reused_with_other_parameters_escalates() {
        let body =
            json!({"error": {"type": "idempotency_error", "code": "idempotency_key_reused"}});
        assert_eq!(
            classify_payment(&answer(400, false, body)),
            Outcome::Unknown {
                reason: Reason::IdempotencyKeyReused,
                escalate: true
            }
        );
    }

    #[test]
    fn only_provably_unsent_calls_may_be_sent_again() {
        assert!(matches!(
            classify_payment(&CallResult::NotSent {
                detail: "refused".into()
            }),
            Outcome::NotExecuted { .. }
        ));
        assert!(matches!(
            classify_payment(&answer(429, false, Value::Null)),
            Outcome::NotExecuted { .. }
        ));
        let invalid = json!({"error": {"type": "invalid_request", "code": "amount_too_small"}});
        assert_eq!(
            classify_payment(&answer(400, false, invalid)),
            Outcome::Failed {
                code: "amount_too_small".into()
            }
        );
    }
}
