//! `payment.create`: pay an invoice to a beneficiary, at the payments provider, under an
//! idempotency key the provider keeps for its retention window.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::catalogue::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, ProviderName, Subject, Target, ToolText,
    WebhookSpec,
};
use crate::intent::payloads::{amount_minor, currency, identifier};
use crate::intent::proposal::Proposal;
use crate::intent::{check_id, check_money, IntentError};
use crate::money::format_amount;
use crate::outcome::{classify_payment, CallResult, Outcome};
use crate::reconcile::{read_search, Found, Reading};

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
}

impl ActionPayload for PaymentPayload {
    type Proposal = Proposal<PaymentPayload>;

    fn check(&self) -> Result<(), IntentError> {
        check_id("payload.invoice_id", &self.invoice_id)?;
        check_id("payload.beneficiary_id", &self.beneficiary_id)?;
        check_money(self.amount_minor, &self.currency)
    }

    fn describe(&self, _target: Option<&str>) -> Option<String> {
        let amount = format_amount(self.amount_minor, &self.currency)?;
        Some(format!(
            "Pay {amount} to {} for invoice {}",
            self.beneficiary_id, self.invoice_id
        ))
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
    provider: ProviderName::Payments,
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
