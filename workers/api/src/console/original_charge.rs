//! A refund's original charge, as the approval page shows it in a block of its own: the
//! payment Stripe described at intake (`fleet_intake::refunded`), frozen in the refund's
//! `prepared` history event (`evidence.refunded`), never read again for the page. The
//! approver of a refund sees whose money goes back, to which card, from which charge of
//! which day and amount, and how much of it was refunded before, without leaving the page.
//!
//! Every text in it is Stripe's: shown with its hidden characters revealed, never
//! interpreted (`fleet_core::visible::reveal`).

use fleet_core::history::HistoryKind;
use fleet_core::money::format_amount;
use fleet_core::visible::reveal;
use fleet_store::EventRow;
use serde_json::Value;

/// The original charge of a refund, in words.
pub struct OriginalCharge {
    /// Stripe's id of the payment (`pi_…` or `ch_…`).
    pub payment: String,
    /// The customer Stripe names on it: its name and e-mail when Stripe keeps them, then
    /// its id (`Jane Doe <jane@example.com> · cus_…`); `None` for a charge without one.
    pub customer: Option<String>,
    /// The card as Stripe describes it (`visa •••• 4242`), when it does.
    pub card: Option<String>,
    /// When it was charged: "2026-03-01 09:30:00 UTC".
    pub date: Option<String>,
    /// What was charged: "125.00 KZT".
    pub amount: String,
    /// What the customer paid of it, when that is not the whole amount.
    pub received: Option<String>,
    /// What was refunded of it before this refund (succeeded or still pending).
    pub refunded_before: String,
    /// What is left to refund.
    pub left: String,
}

impl OriginalCharge {
    /// The original charge kept with the refund's `prepared` event; `None` for what is no
    /// refund read from Stripe at intake.
    pub fn of(events: &[EventRow]) -> Option<OriginalCharge> {
        let read = events
            .iter()
            .find(|e| e.kind == HistoryKind::Prepared)?
            .evidence
            .as_ref()?
            .get("refunded")?;
        OriginalCharge::from_evidence(read)
    }

    fn from_evidence(read: &Value) -> Option<OriginalCharge> {
        let text = |name: &str| read.get(name).and_then(Value::as_str).map(reveal);
        let minor = |name: &str| read.get(name).and_then(Value::as_i64);
        let currency = read.get("currency")?.as_str()?;
        let money =
            |m: i64| format_amount(m, currency).unwrap_or_else(|| format!("{m} {currency}"));
        let amount_minor = minor("amount_minor")?;
        let received_minor = minor("received_minor").unwrap_or(amount_minor);
        let refunded_minor = minor("refunded_minor").unwrap_or(0);
        Some(OriginalCharge {
            payment: text("payment")?,
            customer: customer(&text),
            card: text("card"),
            date: minor("created")
                .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
                .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string()),
            amount: reveal(&money(amount_minor)),
            received: (received_minor != amount_minor).then(|| reveal(&money(received_minor))),
            refunded_before: reveal(&money(refunded_minor)),
            left: reveal(&money((received_minor - refunded_minor).max(0))),
        })
    }
}

/// The customer in words: `Jane Doe <jane@example.com> · cus_…`, whatever part of it
/// Stripe named (a refund frozen before the name and e-mail were read shows the id alone).
fn customer(text: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let named = match (text("customer_name"), text("customer_email")) {
        (Some(name), Some(email)) => Some(format!("{name} <{email}>")),
        (Some(one), None) | (None, Some(one)) => Some(one),
        (None, None) => None,
    };
    match (named, text("customer")) {
        (Some(named), Some(id)) => Some(format!("{named} · {id}")),
        (named, id) => named.or(id),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_charge_is_said_in_the_currencys_words() {
        let read = json!({"payment": "pi_1", "customer": "cus_1", "card": "visa •••• 4242",
                          "created": 1_767_225_600, "amount_minor": 12_500, "currency": "KZT",
                          "received_minor": 12_500, "refunded_minor": 5_000});
        let c = OriginalCharge::from_evidence(&read).unwrap();
        assert_eq!(c.payment, "pi_1");
        assert_eq!(c.customer.as_deref(), Some("cus_1"));
        assert_eq!(c.card.as_deref(), Some("visa •••• 4242"));
        assert_eq!(c.date.as_deref(), Some("2026-01-01 00:00:00 UTC"));
        assert_eq!(c.amount, "125.00 KZT");
        assert_eq!(c.received, None, "all of it was paid");
        assert_eq!(c.refunded_before, "50.00 KZT");
        assert_eq!(c.left, "75.00 KZT");
    }

    #[test]
    fn the_customer_is_named_by_its_name_and_email_then_its_id() {
        let mut read = json!({"payment": "pi_1", "customer": "cus_1", "amount_minor": 100,
                              "currency": "USD", "customer_name": "Jane Doe",
                              "customer_email": "jane@example.com"});
        let said = |read: &Value| OriginalCharge::from_evidence(read).unwrap().customer;
        assert_eq!(
            said(&read).as_deref(),
            Some("Jane Doe <jane@example.com> · cus_1")
        );
        read["customer_name"] = Value::Null;
        assert_eq!(said(&read).as_deref(), Some("jane@example.com · cus_1"));
        read["customer_email"] = Value::Null;
        assert_eq!(said(&read).as_deref(), Some("cus_1"));
        read["customer_name"] = json!("Jane\u{202e}Doe");
        read["customer"] = Value::Null;
        assert_ne!(said(&read).as_deref(), Some("Jane\u{202e}Doe"), "revealed");
    }

    #[test]
    fn stripes_text_is_shown_never_interpreted() {
        let read = json!({"payment": "pi_1\u{202e}", "customer": null, "card": null,
                          "created": null, "amount_minor": 800, "currency": "USD",
                          "received_minor": 0, "refunded_minor": 0});
        let c = OriginalCharge::from_evidence(&read).unwrap();
        assert_ne!(
            c.payment, "pi_1\u{202e}",
            "the hidden character is revealed"
        );
        assert_eq!((c.customer, c.card, c.date), (None, None, None));
        assert_eq!(c.received.as_deref(), Some("0.00 USD"));
        assert_eq!(c.left, "0.00 USD");
        assert!(OriginalCharge::from_evidence(&json!({"payment": "pi_1"})).is_none());
    }
}
