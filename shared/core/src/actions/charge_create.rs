//! `charge.create`: collect an invoice from a customer's saved payment method, at the
//! payments provider spoken as Stripe (a confirmed, off-session PaymentIntent under the
//! operation's idempotency key). Served only with `PAYMENTS_PROVIDER=stripe`: the
//! reference protocol has no charges, and the capability guard refuses the action there.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::Value;

use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, Subject, Target, ToolText, WebhookSpec,
};
use crate::catalogue::provider_spec;
use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::intent_limits::MAX_TEXT_CHARS;
use crate::lookup::Reading;
use crate::members::arguments::Proposal;
use crate::members::checks::{check_id, check_money};
use crate::members::schemas::{amount_minor, currency, identifier};
use crate::money::format_amount;
use crate::outcome::{CallResult, Outcome};
use crate::stripe::charge::{classify_charge, read_payment_intents};

/// A Stripe customer id: `cus_` and letters or digits.
pub const CUSTOMER_PATTERN: &str = "^cus_[A-Za-z0-9]+$";
/// A saved payment method: a PaymentMethod (`pm_…`), a Card (`card_…`) or a Source
/// (`src_…`), as Stripe's PaymentIntents take them.
pub const PAYMENT_METHOD_PATTERN: &str = "^(pm|card|src)_[A-Za-z0-9_]+$";

/// `charge.create`: collect an invoice from a customer's saved payment method.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ChargePayload {
    /// The invoice this charge collects; recorded with the charge at Stripe.
    #[schemars(schema_with = "identifier")]
    pub invoice_id: String,
    /// The Stripe customer charged (`cus_…`).
    #[schemars(schema_with = "customer")]
    pub customer: String,
    /// The customer's saved payment method (`pm_…`, `card_…` or `src_…`), attached to the
    /// customer.
    #[schemars(schema_with = "payment_method")]
    pub payment_method: String,
    /// The amount in the currency's minor unit, an integer.
    #[schemars(schema_with = "amount_minor")]
    pub amount_minor: i64,
    /// An active ISO 4217 code, upper case.
    #[schemars(schema_with = "currency")]
    pub currency: String,
}

fn customer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "maxLength": MAX_TEXT_CHARS, "pattern": CUSTOMER_PATTERN})
}

fn payment_method(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "maxLength": MAX_TEXT_CHARS, "pattern": PAYMENT_METHOD_PATTERN})
}

/// `prefix_` followed by at least one of the characters Stripe's ids are made of.
fn is_stripe_id(value: &str, prefixes: &[&str], extra: &[u8]) -> bool {
    value.len() <= MAX_TEXT_CHARS
        && prefixes.iter().any(|p| {
            value.strip_prefix(p).is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
            })
        })
}

impl ActionPayload for ChargePayload {
    type Proposal = Proposal<ChargePayload>;

    fn check(&self) -> Result<(), IntentError> {
        check_id("payload.invoice_id", &self.invoice_id)?;
        if !is_stripe_id(&self.customer, &["cus_"], b"") {
            return Err(IntentError::field(
                "payload.customer",
                "must be a Stripe customer id (cus_ followed by letters and digits)",
            ));
        }
        if !is_stripe_id(&self.payment_method, &["pm_", "card_", "src_"], b"_") {
            return Err(IntentError::field(
                "payload.payment_method",
                "must be a saved Stripe payment method (pm_…, card_… or src_…)",
            ));
        }
        check_money(self.amount_minor, &self.currency)
    }

    /// The card itself (brand, last four, the customer's name) comes from Stripe at
    /// intake and is shown beside this line as the payee evidence.
    fn describe(&self, _target: Option<&str>) -> Option<Headline> {
        let amount = format_amount(self.amount_minor, &self.currency)?;
        Some(Headline::new(format!(
            "Charge {amount} to customer {}'s payment method {} for invoice {}",
            self.customer, self.payment_method, self.invoice_id
        )))
    }

    fn classify(&self, call: &CallResult, _subject: &Subject<'_>) -> Outcome {
        classify_charge(call)
    }

    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        read_payment_intents(subject.reference, via, objects)
    }
}

pub const SPEC: ActionSpec = ActionSpec {
    action: Action::ChargeCreate,
    wire_name: "charge.create",
    provider: provider_spec::PAYMENTS.name,
    target: Target::Optional,
    effect: Effect::KeyedCreate,
    has_amount: true,
    // Who the effect is taken from: the saved payment method, looked up at intake and
    // read again before the charge.
    payee: Some("payment_method"),
    objects: &[],
    webhook: Some(WebhookSpec {
        object: "payment_intent",
        succeeded: "succeeded",
        failed: "failed",
        pending: &["processing"],
        reference_field: "reference",
    }),
    tool: ToolText {
        name: "charge_create",
        title: "Propose a charge",
        what: "Propose collecting an invoice from a customer's saved card or bank account (charge.create at the payments provider, Stripe only).",
    },
    behaviour: Behaviour::of::<ChargePayload>(),
};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn charge() -> Value {
        json!({"invoice_id": "inv_1042", "customer": "cus_NffrFeUfNV2Hib",
               "payment_method": "pm_1MqLiJLkdIwHu7ixUEgbFdYF", "amount_minor": 1250000,
               "currency": "KZT"})
    }

    #[test]
    fn a_charge_is_checked_member_by_member() {
        assert!(SPEC.check(&charge()).is_ok());
        for pm in ["card_1A", "src_1B", "pm_card_visa"] {
            let mut c = charge();
            c["payment_method"] = json!(pm);
            assert!(SPEC.check(&c).is_ok(), "{pm}");
        }
        let field_of = |member: &str, value: Value| {
            let mut c = charge();
            c[member] = value;
            match SPEC.check(&c) {
                Err(IntentError::InvalidField { field, .. }) => field,
                other => panic!("{member}: {other:?}"),
            }
        };
        assert_eq!(field_of("customer", json!("acct_1")), "payload.customer");
        assert_eq!(field_of("customer", json!("cus_")), "payload.customer");
        assert_eq!(field_of("customer", json!("cus_a b")), "payload.customer");
        assert_eq!(
            field_of("payment_method", json!("tok_visa")),
            "payload.payment_method"
        );
        assert_eq!(
            field_of("payment_method", json!("pm_")),
            "payload.payment_method"
        );
        assert_eq!(field_of("amount_minor", json!(0)), "payload.amount_minor");
        assert_eq!(field_of("currency", json!("kzt")), "payload.currency");
        assert_eq!(field_of("invoice_id", json!("")), "payload.invoice_id");
        let mut extra = charge();
        extra["description"] = json!("x");
        assert!(SPEC.check(&extra).is_err());
    }

    #[test]
    fn the_approver_reads_the_charge_in_words() {
        let line = SPEC.describe(None, &charge()).unwrap();
        assert_eq!(
            line.plain(),
            "Charge 12,500.00 KZT to customer cus_NffrFeUfNV2Hib's payment method pm_1MqLiJLkdIwHu7ixUEgbFdYF for invoice inv_1042"
        );
    }
}
