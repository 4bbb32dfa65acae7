//! The headline that names who is paid: "Pay 1,250.00 EUR to "Acme Supplies Ltd"", with
//! the payee's id, its masked account and the invoice below it. The name is the one the
//! provider's directory holds for the account (the payee evidence kept at intake), so it
//! is free text: it stands in the headline as a quoted piece of its own
//! ([`Headline::payee`]), never inside the sentence of typed values, and plain text quotes
//! it ([`super::quote`]) so that it cannot close early or say another amount first.

use serde_json::Value;

use crate::catalogue::Action;
use crate::headline::{Headline, PayeeNamed};
use crate::money::format_amount;
use crate::payee::PayeeEvidence;
use crate::visible::reveal;

/// The headline of an operation, naming its payee as the directory named it when the
/// action pays one and the payee was found (a payment); otherwise the headline of its
/// payload alone ([`super::headline`]).
pub fn headline_naming_payee(
    action: Action,
    target: Option<&str>,
    payload: &Value,
    payee: Option<&Value>,
) -> Headline {
    let base = super::headline(action, target, payload);
    if action != Action::PaymentCreate {
        return base;
    }
    let Some(found) = payee
        .and_then(PayeeEvidence::from_json)
        .and_then(|e| e.found().cloned())
    else {
        return base;
    };
    let text = |member: &str| payload.get(member).and_then(Value::as_str);
    let (Some(amount), Some(invoice)) = (
        payload
            .get("amount_minor")
            .and_then(Value::as_i64)
            .zip(text("currency"))
            .and_then(|(m, c)| format_amount(m, c)),
        text("invoice_id"),
    ) else {
        return base;
    };
    Headline {
        said: format!("Pay {amount} to"),
        payee: Some(PayeeNamed {
            name: found.name.clone(),
            under: format!(
                "{}, account {}, for invoice {invoice}",
                found.id,
                account_shown(&found.account.masked)
            ),
        }),
        ..base
    }
}

/// A masked account as the directory writes it (`KZ•• •••• •••• 1234`) bare; anything
/// else it might send quoted, so it cannot pass for more words of the line.
fn account_shown(masked: &str) -> String {
    let plain = masked
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '•' || c == ' ');
    if plain {
        masked.to_owned()
    } else {
        super::quote(&reveal(masked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn evidence(name: &str) -> Value {
        json!({"status": "found", "id": "vendor_77", "name": name, "country": "KZ",
               "account": {"scheme": "iban", "masked": "KZ•• •••• •••• 1234",
                           "fingerprint": format!("sha256:{}", "a".repeat(64))},
               "verified": true, "version": 3, "looked_up_at": "2026-12-01T17:00:00Z"})
    }

    fn payment() -> Value {
        json!({"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 125000, "currency": "EUR"})
    }

    #[test]
    fn a_payment_to_a_found_payee_is_headed_by_its_name() {
        let h = headline_naming_payee(
            Action::PaymentCreate,
            None,
            &payment(),
            Some(&evidence("Acme Supplies Ltd")),
        );
        assert_eq!(h.said, "Pay 1,250.00 EUR to");
        let named = h.payee.as_ref().unwrap();
        assert_eq!(named.name, "Acme Supplies Ltd");
        assert_eq!(
            named.under,
            "vendor_77, account KZ•• •••• •••• 1234, for invoice inv_9182"
        );
        assert_eq!(
            h.plain(),
            "Pay 1,250.00 EUR to \"Acme Supplies Ltd\" (vendor_77, account KZ•• •••• •••• 1234, for invoice inv_9182)"
        );
    }

    #[test]
    fn a_name_cannot_say_another_amount_or_leave_its_quotes() {
        let h = headline_naming_payee(
            Action::PaymentCreate,
            None,
            &payment(),
            Some(&evidence("Acme\" 1.00 EUR to \"Bob\n")),
        );
        let plain = h.plain();
        assert!(plain.starts_with("Pay 1,250.00 EUR to \"Acme\\\" 1.00 EUR to \\\"Bob⟨U+000A⟩\" ("));
        assert!(!plain.contains('\n'));
    }

    #[test]
    fn without_a_found_payee_the_payload_heads_it() {
        let unknown = json!({"status": "unknown", "id": "vendor_77", "reason": "not_found",
                             "looked_up_at": "2026-12-01T17:00:00Z"});
        for payee in [None, Some(&unknown)] {
            let h = headline_naming_payee(Action::PaymentCreate, None, &payment(), payee);
            assert_eq!(
                h.plain(),
                "Pay 1,250.00 EUR to vendor_77 for invoice inv_9182"
            );
            assert!(h.payee.is_none());
        }
        let named = json!({"beneficiary_name": "Acme"});
        let mut p = payment();
        p["beneficiary_name"] = named["beneficiary_name"].clone();
        let h = headline_naming_payee(Action::PaymentCreate, None, &p, Some(&evidence("Acme Ltd")));
        assert_eq!(
            h.plain(),
            "Pay 1,250.00 EUR to \"Acme Ltd\" (vendor_77, account KZ•• •••• •••• 1234, for invoice inv_9182) — free text: beneficiary_name \"Acme\""
        );
    }
}
