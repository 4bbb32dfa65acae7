//! Risk cues: what about a payment deserves an approver's second look, judged over the
//! fleet's own history of payments in the tenant (a charge's, over its charges:
//! [`charge`]). Computed at intake, kept with the
//! operation, shown beside the amount and carried in its events; a policy may ask a
//! flagged payment for one more approver or a signed approval (`policy`).
//!
//! Pure: the payment, what the payee directory said about the payee now, and what the
//! tenant's succeeded payments (what was really paid) say about the payee and its account
//! ([`PaidBefore`], kept by the database as each payment succeeds) are inputs; the
//! possible duplicate is judged over the tenant's recent payments that may still pay
//! ([`duplicate`]).

use serde::{Deserialize, Serialize};

pub mod charge;
pub mod duplicate;

pub use charge::{charge_cues, ChargedBefore};
pub use duplicate::{possible_duplicate, DuplicateOf, RecentPayment, DUPLICATE_WINDOW};

/// What the tenant's succeeded payments say about the payee and the account being paid:
/// the aggregates the store keeps per payee and per account fingerprint, updated in the
/// transaction that records each success (docs/policies.md#risk-cues).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaidBefore {
    /// How many payments to the payee (its beneficiary id) succeeded.
    pub payments_to_payee: u64,
    /// The account fingerprint of the payee's last succeeded payment that named one
    /// (latest by the time it was made, then by operation id).
    pub last_account: Option<String>,
    /// How many payments to the account being paid succeeded, to any payee.
    pub payments_to_account: u64,
    /// The amounts of the payee's latest payments in this payment's currency (at most
    /// [`USUAL_AMOUNTS_KEPT`], latest by the time they were made), in any order.
    pub latest_amounts: Vec<i64>,
}

/// How many of a payee's latest amounts per currency its usual amount is the median of
/// (the database keeps as many: `migrations/0059_payee_aggregates.sql`).
pub const USUAL_AMOUNTS_KEPT: usize = 100;

/// The payee as the directory described it at intake; `None` fields are unknown. A
/// provider without a directory says nothing: `known`, with nothing else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PayeeNow {
    /// `false`: the directory was asked and could not describe the payee.
    pub known: bool,
    pub verified: Option<bool>,
    pub account_fingerprint: Option<String>,
}

/// The payment being judged.
#[derive(Debug, Clone, Copy)]
pub struct PaymentAsked<'a> {
    pub operation_id: &'a str,
    /// The operation it replaces, if any (never its duplicate).
    pub supersedes: Option<&'a str>,
    pub beneficiary_id: &'a str,
    pub invoice_id: &'a str,
    pub amount_minor: i64,
    pub currency: &'a str,
}

/// Why a payment is flagged. The codes (serialized names) are stable: they are stored
/// with the operation and carried in its view and events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cue", rename_all = "snake_case")]
pub enum RiskCue {
    /// Nothing was ever paid to this payee in this tenant.
    FirstPaymentToPayee,
    /// Nothing was ever paid to this account (its fingerprint), to any payee of the tenant.
    FirstPaymentToAccount,
    /// The payee's account is not the one of its last succeeded payment that named one.
    AccountChangedSinceLastPayment,
    /// The amount is more than `multiple` times the median of this payee's latest
    /// [`USUAL_AMOUNTS_KEPT`] succeeded payments in the same currency (`median_minor`).
    AmountAboveUsual { multiple: u32, median_minor: i64 },
    /// The directory has not verified the payee.
    UnverifiedPayee,
    /// The directory could not describe the payee.
    UnknownPayee,
    /// The intent named the payee, and the directory did not confirm the name as the
    /// account holder's: a close match, no match, or a check that was not possible
    /// (`crate::payee::name_check`).
    PayeeNameUnconfirmed { result: crate::payee::NameResult },
    /// Another payment of the tenant to this payee, made within [`DUPLICATE_WINDOW`] and
    /// not failed, cancelled, rejected or expired, is for the same invoice or of the same
    /// amount (`same`); `operation_id` names it.
    PossibleDuplicate {
        operation_id: String,
        same: DuplicateOf,
    },
    /// A charge (`charge.create`): nothing was ever charged to this card (its
    /// fingerprint) in this tenant, for any customer (`charge`).
    FirstChargeToCard,
    /// A charge: the amount is more than `multiple` times the median of the customer's
    /// latest [`USUAL_AMOUNTS_KEPT`] succeeded charges in the same currency
    /// (`median_minor`).
    ChargeAboveUsual { multiple: u32, median_minor: i64 },
}

impl RiskCue {
    /// The cue as the approval page says it.
    pub fn in_words(&self, currency: &str) -> String {
        match self {
            RiskCue::FirstPaymentToPayee => "first payment to this payee".to_owned(),
            RiskCue::FirstPaymentToAccount => "first payment to this bank account".to_owned(),
            RiskCue::AccountChangedSinceLastPayment => {
                "the payee's bank account changed since its last payment".to_owned()
            }
            RiskCue::AmountAboveUsual {
                multiple,
                median_minor,
            } => format!(
                "more than {multiple}× this payee's usual amount ({})",
                crate::money::format_amount(*median_minor, currency)
                    .unwrap_or_else(|| median_minor.to_string())
            ),
            RiskCue::UnverifiedPayee => "the payee is not verified by the provider".to_owned(),
            RiskCue::UnknownPayee => "the payee could not be looked up".to_owned(),
            RiskCue::PayeeNameUnconfirmed { result } => match result {
                crate::payee::NameResult::CloseMatch => {
                    "the payee's name is only a close match for the account holder's".to_owned()
                }
                crate::payee::NameResult::NoMatch => {
                    "the payee's name does not match the account holder's".to_owned()
                }
                _ => "the payee's name could not be checked against the account".to_owned(),
            },
            RiskCue::PossibleDuplicate { operation_id, same } => {
                let days = DUPLICATE_WINDOW.num_days();
                match same {
                    DuplicateOf::InvoiceId => format!(
                        "possible duplicate: {operation_id}, from the last {days} days, pays this payee for the same invoice"
                    ),
                    DuplicateOf::Amount => format!(
                        "possible duplicate: {operation_id}, from the last {days} days, pays this payee the same amount"
                    ),
                }
            }
            RiskCue::FirstChargeToCard => "first charge to this card".to_owned(),
            RiskCue::ChargeAboveUsual {
                multiple,
                median_minor,
            } => format!(
                "more than {multiple}× this customer's usual charge ({})",
                crate::money::format_amount(*median_minor, currency)
                    .unwrap_or_else(|| median_minor.to_string())
            ),
        }
    }
}

/// The multiple of the payee's median above which an amount is flagged, unless a policy
/// says another.
pub const DEFAULT_MEDIAN_MULTIPLE: u32 = 3;

/// Every cue that applies to `asked`, in a fixed order.
pub fn cues(
    asked: PaymentAsked<'_>,
    payee: &PayeeNow,
    paid: &PaidBefore,
    median_multiple: u32,
) -> Vec<RiskCue> {
    let mut out = Vec::new();
    if !payee.known {
        out.push(RiskCue::UnknownPayee);
    } else if payee.verified == Some(false) {
        out.push(RiskCue::UnverifiedPayee);
    }
    if paid.payments_to_payee == 0 {
        out.push(RiskCue::FirstPaymentToPayee);
    }
    if let Some(fingerprint) = &payee.account_fingerprint {
        if paid.payments_to_account == 0 {
            out.push(RiskCue::FirstPaymentToAccount);
        }
        if paid
            .last_account
            .as_ref()
            .is_some_and(|last| last != fingerprint)
        {
            out.push(RiskCue::AccountChangedSinceLastPayment);
        }
    }
    let mut amounts = paid.latest_amounts.clone();
    if let Some(median) = median(&mut amounts) {
        let limit = median.saturating_mul(i64::from(median_multiple));
        if median > 0 && asked.amount_minor > limit {
            out.push(RiskCue::AmountAboveUsual {
                multiple: median_multiple,
                median_minor: median,
            });
        }
    }
    out
}

/// The amount and the text members `names` of a payload, when every one is there: what
/// the cues of a payment or a charge read. (An intent that lacks one was refused before.)
pub fn amount_and_texts<'a, const N: usize>(
    payload: &'a serde_json::Value,
    names: [&str; N],
) -> Option<(i64, [&'a str; N])> {
    let amount_minor = payload.get("amount_minor")?.as_i64()?;
    let mut texts = [""; N];
    for (text, name) in texts.iter_mut().zip(names) {
        *text = payload.get(name)?.as_str()?;
    }
    Some((amount_minor, texts))
}

/// The median (the lower middle of an even count, so it is always an amount that was
/// really paid).
pub(crate) fn median(amounts: &mut [i64]) -> Option<i64> {
    if amounts.is_empty() {
        return None;
    }
    amounts.sort_unstable();
    Some(amounts[(amounts.len() - 1) / 2])
}

#[cfg(test)]
mod tests;
