//! `refund.create`: give back (part of) a payment, at the payments provider, under the
//! same idempotency rules as a payment.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, Subject, Target, ToolText, WebhookSpec,
};
use crate::actions::payment_create::classify_payment;
use crate::actions::search::read_search;
use crate::catalogue::provider_spec;
use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::lookup::{Found, Reading};
use crate::members::arguments::Proposal;
use crate::members::checks::{check_id, check_money, check_text};
use crate::members::schemas::{amount_minor, currency, identifier, text};
use crate::money::format_amount;
use crate::objects::{ObjectField, ObjectRef};
use crate::outcome::{CallResult, Outcome};

/// `refund.create`: give back (part of) a payment the provider holds.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RefundPayload {
    /// The provider's id of the payment refunded (`pay_…`).
    #[schemars(schema_with = "identifier")]
    pub payment_id: String,
    /// The amount refunded in the currency's minor unit, an integer.
    #[schemars(schema_with = "amount_minor")]
    pub amount_minor: i64,
    /// An active ISO 4217 code, upper case: the payment's.
    #[schemars(schema_with = "currency")]
    pub currency: String,
    /// Why, as the provider records it.
    #[schemars(schema_with = "text")]
    pub reason: String,
}

impl ActionPayload for RefundPayload {
    type Proposal = Proposal<RefundPayload>;

    fn check(&self) -> Result<(), IntentError> {
        check_id("payload.payment_id", &self.payment_id)?;
        check_text("payload.reason", &self.reason)?;
        check_money(self.amount_minor, &self.currency)
    }

    /// The reason is free text: quoted after the sentence, never inside it.
    fn describe(&self, _target: Option<&str>) -> Option<Headline> {
        let amount = format_amount(self.amount_minor, &self.currency)?;
        Some(
            Headline::new(format!("Refund {amount} of payment {}", self.payment_id))
                .quoting("reason", &*self.reason),
        )
    }

    fn classify(&self, call: &CallResult, _subject: &Subject<'_>) -> Outcome {
        classify_payment(call)
    }

    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        read_search(subject, via, objects, "reference", Found::from_object)
    }
}

pub const SPEC: ActionSpec = ActionSpec {
    action: Action::RefundCreate,
    wire_name: "refund.create",
    provider: provider_spec::PAYMENTS.name,
    target: Target::Optional,
    effect: Effect::KeyedCreate,
    has_amount: true,
    payee: None,
    objects: &[ObjectRef {
        kind: "payment",
        field: ObjectField::Payload("payment_id"),
        recorded_by: &[Action::PaymentCreate, Action::ChargeCreate],
    }],
    webhook: Some(WebhookSpec {
        object: "refund",
        succeeded: "succeeded",
        failed: "failed",
        pending: &["pending"],
        reference_field: "reference",
    }),
    tool: ToolText {
        name: "refund_create",
        title: "Propose a refund",
        what:
            "Propose refunding all or part of a payment (refund.create at the payments provider).",
    },
    behaviour: Behaviour::of::<RefundPayload>(),
};
