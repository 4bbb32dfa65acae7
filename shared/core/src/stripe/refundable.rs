//! A refund through Stripe, checked at intake against the payment it refunds: the
//! PaymentIntent (or Charge) named by `payment_id` must be the tenant's, by the
//! `metadata[fleet_tenant]` the fleet writes on what it charges or by being in the
//! tenant's connected account (read there with `Stripe-Account`, `crate::stripe::accounts`:
//! another account's payment is not found at all), and the refund may not
//! exceed what is left of it (received minus refunded already). What was read is frozen
//! with the operation as evidence, for the approver: the customer, the card, the date, the
//! amount and what was refunded before. Pure: the objects are read by the adapter.
//!
//! Stripe's reference: <https://docs.stripe.com/api/payment_intents/object>,
//! <https://docs.stripe.com/api/charges/object>, <https://docs.stripe.com/api/refunds/object>.

use serde_json::{json, Value};

use crate::refusal::IntakeRefusal;
use crate::stripe::TENANT_METADATA;

/// The payment a refund gives money back from, as Stripe describes it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refundable {
    /// `pi_…` or `ch_…`.
    pub id: String,
    /// Its `metadata[fleet_tenant]`: the tenant the fleet charged it for, if it did.
    pub tenant: Option<String>,
    /// The connected account it was read in (`Stripe-Account`: the refunding tenant's);
    /// `None`: the platform's own account. Set by the reader, not by the object.
    pub account: Option<String>,
    /// The customer's id (`cus_…`).
    pub customer: Option<String>,
    /// The customer's `name` and `email` as Stripe keeps them, when the read expanded the
    /// customer (`expand[]=customer`) and it is not deleted: who the approver gives money
    /// back to, in words rather than an id.
    pub customer_name: Option<String>,
    pub customer_email: Option<String>,
    /// The card as a person reads it (`visa •••• 4242`), when Stripe's answer names it.
    pub card: Option<String>,
    /// When it was created, Unix seconds.
    pub created: Option<i64>,
    pub amount_minor: i64,
    /// Upper case, as the fleet writes currencies.
    pub currency: String,
    /// What the customer paid of it (a PaymentIntent's `amount_received`, a Charge's
    /// `amount_captured`; 0 for one not paid).
    pub received_minor: i64,
    /// What was refunded of it before (refunds `succeeded` or still `pending`).
    pub refunded_minor: i64,
}

/// Reads a PaymentIntent or a Charge, and the refunds of a PaymentIntent (a Charge says
/// its own `amount_refunded`). Its `customer` may be the id or the expanded Customer
/// (<https://docs.stripe.com/api/expanding_objects>). `None` when it is not the documented
/// shape.
pub fn refundable_of(payment: &Value, refunds: &[Value]) -> Option<Refundable> {
    let text = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
    let kind = payment.get("object")?.as_str()?;
    let amount_minor = payment.get("amount")?.as_i64()?;
    let status = payment.get("status").and_then(Value::as_str);
    let (received_minor, refunded_minor, charge) = match kind {
        "payment_intent" => {
            let received = payment
                .get("amount_received")
                .and_then(Value::as_i64)
                .unwrap_or(if status == Some("succeeded") {
                    amount_minor
                } else {
                    0
                });
            let refunded = refunds
                .iter()
                .filter(|r| {
                    matches!(
                        r.get("status").and_then(Value::as_str),
                        Some("succeeded" | "pending" | "requires_action")
                    )
                })
                .map(|r| r.get("amount").and_then(Value::as_i64))
                .sum::<Option<i64>>()?;
            (received, refunded, payment.get("latest_charge"))
        }
        "charge" => {
            let captured = payment
                .get("amount_captured")
                .and_then(Value::as_i64)
                .unwrap_or(if status == Some("succeeded") {
                    amount_minor
                } else {
                    0
                });
            let refunded = payment
                .get("amount_refunded")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            (captured, refunded, Some(payment))
        }
        _ => return None,
    };
    let card = charge
        .and_then(|c| c.pointer("/payment_method_details/card"))
        .and_then(|card| {
            Some(format!(
                "{} •••• {}",
                text(card, "brand")?,
                text(card, "last4")?
            ))
        });
    let (customer, customer_name, customer_email) = customer_of(payment.get("customer"));
    Some(Refundable {
        id: text(payment, "id")?,
        tenant: payment
            .get("metadata")
            .and_then(|m| m.get(TENANT_METADATA))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned),
        account: None,
        customer,
        customer_name,
        customer_email,
        card,
        created: payment.get("created").and_then(Value::as_i64),
        amount_minor,
        currency: text(payment, "currency")?.to_ascii_uppercase(),
        received_minor,
        refunded_minor,
    })
}

/// The customer's id, name and e-mail: an id alone, or the expanded Customer (a deleted
/// one has an id and nothing else). Blank text is none.
fn customer_of(customer: Option<&Value>) -> (Option<String>, Option<String>, Option<String>) {
    let Some(customer) = customer else {
        return (None, None, None);
    };
    if let Some(id) = customer.as_str() {
        return (Some(id.to_owned()), None, None);
    }
    let text = |name: &str| {
        customer
            .get(name)
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .map(str::to_owned)
    };
    let deleted = customer.get("deleted") == Some(&Value::Bool(true));
    if deleted {
        return (text("id"), None, None);
    }
    (text("id"), text("name"), text("email"))
}

/// Why a refund may not be asked of this payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundRefusal {
    /// The payment was charged for another tenant.
    OtherTenant,
    /// The refund is in another currency than the payment.
    OtherCurrency,
    /// More than what is left of the payment.
    Exceeds,
}

impl RefundRefusal {
    pub fn refusal(self) -> IntakeRefusal {
        match self {
            RefundRefusal::OtherTenant => IntakeRefusal::ObjectOfOtherTenant,
            RefundRefusal::OtherCurrency => IntakeRefusal::InvalidField,
            RefundRefusal::Exceeds => IntakeRefusal::RefundExceedsPayment,
        }
    }

    pub fn field(self) -> &'static str {
        match self {
            RefundRefusal::OtherTenant => "payload.payment_id",
            RefundRefusal::OtherCurrency => "payload.currency",
            RefundRefusal::Exceeds => "payload.amount_minor",
        }
    }
}

impl Refundable {
    /// What is left to refund.
    pub fn left_minor(&self) -> i64 {
        (self.received_minor - self.refunded_minor).max(0)
    }

    /// Whether `tenant` may refund `amount_minor` of `currency` of it. It is the
    /// tenant's when its metadata names the tenant, or when it was read in the tenant's
    /// connected account (Stripe answers a read there only with that account's objects,
    /// whatever their metadata says). A payment on the platform's account whose metadata
    /// names no tenant was not charged by the fleet: whose it is, is left to the fleet's
    /// own records and the policy's rule for objects made outside the fleet
    /// (`crate::objects`).
    pub fn judge(
        &self,
        tenant: &str,
        amount_minor: i64,
        currency: &str,
    ) -> Result<(), RefundRefusal> {
        let in_own_account = self.account.is_some();
        if !in_own_account && self.tenant.as_deref().is_some_and(|t| t != tenant) {
            return Err(RefundRefusal::OtherTenant);
        }
        if self.currency != currency {
            return Err(RefundRefusal::OtherCurrency);
        }
        if amount_minor > self.left_minor() {
            return Err(RefundRefusal::Exceeds);
        }
        Ok(())
    }

    /// The evidence kept with the operation: what the approver is shown of the payment.
    pub fn to_json(&self) -> Value {
        json!({
            "payment": self.id,
            "account": self.account,
            "customer": self.customer,
            "customer_name": self.customer_name,
            "customer_email": self.customer_email,
            "card": self.card,
            "created": self.created,
            "amount_minor": self.amount_minor,
            "currency": self.currency,
            "received_minor": self.received_minor,
            "refunded_minor": self.refunded_minor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(tenant: Option<&str>) -> Value {
        json!({"id": "pi_1", "object": "payment_intent", "status": "succeeded", "amount": 5000,
               "currency": "kzt", "customer": "cus_1", "created": 1_767_000_000,
               "metadata": tenant.map_or(json!({}), |t| json!({"fleet_tenant": t})),
               "latest_charge": {"id": "ch_1", "object": "charge",
                   "payment_method_details": {"card": {"brand": "visa", "last4": "4242"}}}})
    }

    fn refund(amount: i64, status: &str) -> Value {
        json!({"id": "re_1", "object": "refund", "amount": amount, "status": status})
    }

    #[test]
    fn what_is_left_is_received_minus_refunded() {
        let refunds = [
            refund(1000, "succeeded"),
            refund(500, "pending"),
            refund(900, "failed"),
        ];
        let paid = refundable_of(&intent(Some("t_a")), &refunds).unwrap();
        assert_eq!(paid.received_minor, 5000);
        assert_eq!(paid.refunded_minor, 1500);
        assert_eq!(paid.left_minor(), 3500);
        assert_eq!(paid.card.as_deref(), Some("visa •••• 4242"));
        assert_eq!(paid.judge("t_a", 3500, "KZT"), Ok(()));
        assert_eq!(paid.judge("t_a", 3501, "KZT"), Err(RefundRefusal::Exceeds));
        assert_eq!(
            paid.judge("t_a", 1, "EUR"),
            Err(RefundRefusal::OtherCurrency)
        );
        assert_eq!(paid.judge("t_b", 1, "KZT"), Err(RefundRefusal::OtherTenant));
        // Read in the refunding tenant's connected account, it is that tenant's, whatever
        // tenant its metadata names.
        let in_account = Refundable {
            account: Some("acct_1B".into()),
            ..paid.clone()
        };
        assert_eq!(in_account.judge("t_b", 1, "KZT"), Ok(()));
        assert_eq!(in_account.to_json()["account"], "acct_1B");
        let outside = refundable_of(&intent(None), &[]).unwrap();
        assert_eq!(outside.judge("t_b", 5000, "KZT"), Ok(()));
        let mut unpaid = intent(Some("t_a"));
        unpaid["status"] = json!("requires_payment_method");
        let unpaid = refundable_of(&unpaid, &[]).unwrap();
        assert_eq!(unpaid.judge("t_a", 1, "KZT"), Err(RefundRefusal::Exceeds));
        assert_eq!(
            paid.to_json()["refunded_minor"],
            1500,
            "the evidence says what was refunded before"
        );
    }

    #[test]
    fn the_customer_is_read_by_id_or_expanded() {
        let paid = refundable_of(&intent(Some("t_a")), &[]).unwrap();
        assert_eq!(paid.customer.as_deref(), Some("cus_1"));
        assert_eq!((paid.customer_name, paid.customer_email), (None, None));
        let mut expanded = intent(Some("t_a"));
        expanded["customer"] = json!({"id": "cus_1", "object": "customer",
                                      "name": "Jane Doe", "email": "jane@example.com"});
        let paid = refundable_of(&expanded, &[]).unwrap();
        assert_eq!(paid.customer.as_deref(), Some("cus_1"));
        assert_eq!(paid.customer_name.as_deref(), Some("Jane Doe"));
        assert_eq!(paid.customer_email.as_deref(), Some("jane@example.com"));
        assert_eq!(paid.to_json()["customer_name"], "Jane Doe");
        assert_eq!(paid.to_json()["customer_email"], "jane@example.com");
        expanded["customer"] = json!({"id": "cus_1", "object": "customer", "deleted": true});
        let paid = refundable_of(&expanded, &[]).unwrap();
        assert_eq!(paid.customer.as_deref(), Some("cus_1"));
        assert_eq!(paid.customer_name, None);
        expanded["customer"] = json!({"id": "cus_1", "name": " ", "email": null});
        let paid = refundable_of(&expanded, &[]).unwrap();
        assert_eq!((paid.customer_name, paid.customer_email), (None, None));
        expanded["customer"] = Value::Null;
        assert_eq!(refundable_of(&expanded, &[]).unwrap().customer, None);
    }

    #[test]
    fn a_charge_says_its_own_refunded_amount() {
        let charge = json!({"id": "ch_1", "object": "charge", "status": "succeeded",
                            "amount": 800, "amount_captured": 800, "amount_refunded": 300,
                            "currency": "usd", "metadata": {"fleet_tenant": "t_a"}});
        let paid = refundable_of(&charge, &[]).unwrap();
        assert_eq!(paid.left_minor(), 500);
        assert_eq!(paid.currency, "USD");
        assert!(refundable_of(&json!({"object": "customer"}), &[]).is_none());
    }
}
