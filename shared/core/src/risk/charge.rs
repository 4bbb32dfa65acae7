//! Risk cues of a charge (`charge.create`): what about taking money from a customer's
//! saved card deserves an approver's second look, judged over the tenant's own succeeded
//! charges. A charge's counterpart is who pays, so the payment's "payee" is here the
//! card (by the fingerprint the intake froze as the payer evidence) and the customer:
//! a card never charged before in the tenant, and an amount far above what the customer
//! is usually charged (docs/policies.md#charge-cues).
//!
//! Pure: the charge, the card's fingerprint as Stripe described it at intake, and what the
//! tenant's succeeded charges say about that card and that customer ([`ChargedBefore`],
//! kept by the database as each charge succeeds:
//! `migrations/0065_charge_aggregates.sql`) are inputs.

use super::{median, RiskCue};

/// What the tenant's succeeded charges say about the card and the customer charged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChargedBefore {
    /// How many charges to the card (its fingerprint) succeeded, for any customer.
    pub charges_to_card: u64,
    /// The amounts of the customer's latest succeeded charges in this charge's currency
    /// (at most [`super::USUAL_AMOUNTS_KEPT`], latest by the time they were made), in any
    /// order.
    pub latest_amounts: Vec<i64>,
}

/// Every cue that applies to a charge of `amount_minor` to the card whose fingerprint is
/// `card_fingerprint` (`None`: Stripe described no card, so nothing is known to have been
/// charged to it), in a fixed order.
pub fn charge_cues(
    amount_minor: i64,
    card_fingerprint: Option<&str>,
    charged: &ChargedBefore,
    median_multiple: u32,
) -> Vec<RiskCue> {
    let mut out = Vec::new();
    if card_fingerprint.is_none() || charged.charges_to_card == 0 {
        out.push(RiskCue::FirstChargeToCard);
    }
    let mut amounts = charged.latest_amounts.clone();
    if let Some(median) = median(&mut amounts) {
        let limit = median.saturating_mul(i64::from(median_multiple));
        if median > 0 && amount_minor > limit {
            out.push(RiskCue::ChargeAboveUsual {
                multiple: median_multiple,
                median_minor: median,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charged(to_card: u64, amounts: &[i64]) -> ChargedBefore {
        ChargedBefore {
            charges_to_card: to_card,
            latest_amounts: amounts.to_vec(),
        }
    }

    #[test]
    fn a_card_never_charged_in_the_tenant_is_a_first() {
        assert_eq!(
            charge_cues(12_500, Some("sha256:a"), &ChargedBefore::default(), 3),
            [RiskCue::FirstChargeToCard]
        );
        // Nothing described: nothing is known to have been charged to it.
        assert_eq!(
            charge_cues(12_500, None, &charged(4, &[12_500]), 3),
            [RiskCue::FirstChargeToCard]
        );
        assert_eq!(
            charge_cues(12_500, Some("sha256:a"), &charged(1, &[12_500]), 3),
            []
        );
    }

    #[test]
    fn more_than_the_multiple_of_the_customers_median_is_above_usual() {
        let before = charged(3, &[10_000, 40_000, 12_000]);
        // The median is 12,000: 36,000 is not more than three times it, 36,001 is.
        assert_eq!(charge_cues(36_000, Some("sha256:a"), &before, 3), []);
        assert_eq!(
            charge_cues(36_001, Some("sha256:a"), &before, 3),
            [RiskCue::ChargeAboveUsual {
                multiple: 3,
                median_minor: 12_000
            }]
        );
        // A customer never charged in the currency has no usual amount; a median of 0
        // flags nothing.
        assert_eq!(
            charge_cues(i64::MAX, Some("sha256:a"), &charged(1, &[]), 3),
            []
        );
        assert_eq!(charge_cues(1, Some("sha256:a"), &charged(1, &[0]), 3), []);
    }

    #[test]
    fn charge_cues_are_stable_codes_said_in_words() {
        let cue = RiskCue::ChargeAboveUsual {
            multiple: 3,
            median_minor: 12_000,
        };
        assert_eq!(
            serde_json::to_value(&cue).unwrap(),
            serde_json::json!({"cue": "charge_above_usual", "multiple": 3, "median_minor": 12000})
        );
        assert_eq!(
            serde_json::to_value(RiskCue::FirstChargeToCard).unwrap(),
            serde_json::json!({"cue": "first_charge_to_card"})
        );
        assert_eq!(
            cue.in_words("KZT"),
            "more than 3× this customer's usual charge (120.00 KZT)"
        );
        assert_eq!(
            RiskCue::FirstChargeToCard.in_words("KZT"),
            "first charge to this card"
        );
    }
}
