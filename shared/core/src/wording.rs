//! A snapshot in words, as the approver reads it: who receives what amount, for what
//! ("Pay 12,500.00 KZT to vendor_77 for invoice inv_9182"), any free text it carries quoted
//! after that ([`Headline`]), and how long is left to decide. Pure: the snapshot and the
//! seconds left (read with the database clock) are inputs.

use serde_json::Value;

use crate::catalogue::Action;

mod page;
mod payee_named;

pub use crate::headline::{quote, Headline, PayeeNamed, Quoted, FREE_TEXT_MARK};
pub use crate::json_words::value_in_words;
pub use page::{
    amount_confirmed, approval_in_words, instant_in_words, patch_field_in_words,
    patch_value_in_words, reason_in_words, reason_name_in_words, status_in_words,
};
pub use payee_named::headline_naming_payee;

/// What the operation will do once approved, as its action's catalogue entry words it:
/// a sentence of typed values, then the free text quoted. Every value comes from the
/// stored snapshot (already validated); anything unreadable is said plainly rather than
/// guessed. The console shows it; the statement an approver signs carries its
/// [`Headline::plain`] form as `summary`.
pub fn headline(action: Action, target: Option<&str>, payload: &Value) -> Headline {
    action
        .spec()
        .describe(target, payload)
        .unwrap_or_else(|| Headline::new(format!("{action} (its payload cannot be read as one)")))
}

/// [`headline`] as one line of plain text ([`Headline::plain`]).
pub fn describe(action: Action, target: Option<&str>, payload: &Value) -> String {
    headline(action, target, payload).plain()
}

/// "expires in 54 min", "expires in 2 h 5 min", "expired 3 min ago": the time left to
/// decide, from the seconds left by the database clock (negative once past).
pub fn expiry_in_words(seconds_left: i64) -> String {
    if seconds_left > 0 {
        format!("expires in {}", duration_in_words(seconds_left))
    } else {
        format!(
            "expired {} ago",
            duration_in_words(seconds_left.saturating_neg().max(1))
        )
    }
}

/// A duration rounded down to its two largest units: "40 s", "54 min", "2 h 5 min",
/// "3 d 4 h".
pub fn duration_in_words(seconds: i64) -> String {
    let s = seconds.max(0);
    let (d, h, m) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_payment_says_who_receives_what_for_what() {
        let p = json!({"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"});
        assert_eq!(
            describe(Action::PaymentCreate, None, &p),
            "Pay 12,500.00 KZT to vendor_77 for invoice inv_9182"
        );
        let yen = json!({"invoice_id": "inv_1", "beneficiary_id": "v_1", "amount_minor": 1250000, "currency": "JPY"});
        assert_eq!(
            describe(Action::PaymentCreate, None, &yen),
            "Pay 1,250,000 JPY to v_1 for invoice inv_1"
        );
    }

    #[test]
    fn refunds_and_deals_in_words() {
        let refund = json!({"payment_id": "pay_01J", "amount_minor": 2500, "currency": "USD", "reason": "duplicate charge"});
        assert_eq!(
            describe(Action::RefundCreate, None, &refund),
            "Refund 25.00 USD of payment pay_01J — free text: reason \"duplicate charge\""
        );
        let create = json!({"name": "Acme renewal", "amount_minor": 990000, "currency": "EUR", "stage": "proposal", "owner_id": "u_7"});
        assert_eq!(
            describe(Action::CrmDealCreate, None, &create),
            "Create a deal worth 9,900.00 EUR, owned by u_7 — free text: name \"Acme renewal\", stage \"proposal\""
        );
        let update = json!({"expected_version": 3, "patch": {"stage": "won", "amount_minor": 5000, "note": null}});
        assert_eq!(
            describe(Action::CrmDealUpdate, Some("deal_01J"), &update),
            r#"Update deal deal_01J at version 3, changing 3 fields — free text: changes "amount_minor to 5000, note to nothing, stage to \"won\"""#
        );
    }

    /// The deal name that tried to say another amount first: the sentence holds the real
    /// amount and nothing the agent wrote; the name follows, quoted, its quotes escaped.
    #[test]
    fn a_deal_name_cannot_say_an_amount_before_the_real_one() {
        let name = "Acme renewal\" worth 10.00 KZT at stage lead, owned by u_7. Also note: \"x";
        let create = json!({"name": name, "amount_minor": 5_000_000_000i64, "currency": "KZT", "stage": "lead", "owner_id": "u_7"});
        let h = headline(Action::CrmDealCreate, None, &create);
        assert_eq!(
            h.said,
            "Create a deal worth 50,000,000.00 KZT, owned by u_7"
        );
        assert_eq!(
            h.quoted,
            vec![
                Quoted {
                    member: "name",
                    text: name.to_owned()
                },
                Quoted {
                    member: "stage",
                    text: "lead".to_owned()
                },
            ]
        );
        let plain = h.plain();
        assert_eq!(
            plain,
            r#"Create a deal worth 50,000,000.00 KZT, owned by u_7 — free text: name "Acme renewal\" worth 10.00 KZT at stage lead, owned by u_7. Also note: \"x", stage "lead""#
        );
        let first_amount = plain.find(" KZT").unwrap();
        assert_eq!(
            &plain[first_amount - 13..first_amount + 4],
            "50,000,000.00 KZT"
        );
        // Padding cannot push the real amount out of view: blanks are written as code points.
        let padded = json!({"name": format!("x{}", "\u{2800}".repeat(3)), "amount_minor": 1, "currency": "KZT", "stage": "lead", "owner_id": "u_7"});
        assert!(describe(Action::CrmDealCreate, None, &padded)
            .contains("\"x⟨U+2800⟩⟨U+2800⟩⟨U+2800⟩\""));
    }

    #[test]
    fn only_typed_values_make_a_sentence() {
        let refund = json!({"payment_id": "pay_01J", "amount_minor": 2500, "currency": "USD", "reason": "worth 1.00 USD"});
        let h = headline(Action::RefundCreate, None, &refund);
        assert_eq!(h.said, "Refund 25.00 USD of payment pay_01J");
        assert!(!h.said.contains("1.00 USD"));
        let payment = json!({"invoice_id": "inv_1", "beneficiary_id": "v_1", "amount_minor": 100, "currency": "KZT"});
        assert!(headline(Action::PaymentCreate, None, &payment)
            .quoted
            .is_empty());
    }

    #[test]
    fn an_unreadable_payload_is_said_plainly() {
        assert_eq!(
            describe(Action::PaymentCreate, None, &json!({"amount_minor": 5})),
            "payment.create (its payload cannot be read as one)"
        );
        assert_eq!(
            describe(
                Action::CrmDealUpdate,
                None,
                &json!({"expected_version": 3, "patch": {}})
            ),
            "crm.deal.update (its payload cannot be read as one)"
        );
        let bad_currency =
            json!({"invoice_id": "i", "beneficiary_id": "b", "amount_minor": 5, "currency": "XYZ"});
        assert!(describe(Action::PaymentCreate, None, &bad_currency).contains("cannot be read"));
    }

    #[test]
    fn time_left_in_words() {
        assert_eq!(expiry_in_words(54 * 60 + 59), "expires in 54 min");
        assert_eq!(expiry_in_words(40), "expires in 40 s");
        assert_eq!(expiry_in_words(2 * 3600 + 5 * 60), "expires in 2 h 5 min");
        assert_eq!(expiry_in_words(3600), "expires in 1 h");
        assert_eq!(
            expiry_in_words(3 * 86_400 + 4 * 3600 + 7),
            "expires in 3 d 4 h"
        );
        assert_eq!(expiry_in_words(-180), "expired 3 min ago");
        assert_eq!(expiry_in_words(0), "expired 1 s ago");
    }
}
