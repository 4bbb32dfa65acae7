//! Risk cues: what about a payment deserves an approver's second look, judged over the
//! fleet's own history of payments in the tenant. Computed at intake, kept with the
//! operation, shown beside the amount and carried in its events; a policy may ask a
//! flagged payment for one more approver or a signed approval (`policy`).
//!
//! Pure: the payment, what the payee directory said about the payee now, and the
//! tenant's earlier payments (succeeded ones: what was really paid) are inputs; the
//! possible duplicate is judged over the tenant's recent payments that may still pay
//! ([`duplicate`]).

use serde::{Deserialize, Serialize};

pub mod duplicate;

pub use duplicate::{possible_duplicate, DuplicateOf, RecentPayment, DUPLICATE_WINDOW};

/// One earlier payment of the tenant that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastPayment {
    pub beneficiary_id: String,
    pub amount_minor: i64,
    pub currency: String,
    /// The payee's account fingerprint when it was paid (`None` when the directory
    /// could not say).
    pub account_fingerprint: Option<String>,
}

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
    /// Nothing was ever paid to this account (its fingerprint), to any payee.
    FirstPaymentToAccount,
    /// The payee's account is not the one of its last payment.
    AccountChangedSinceLastPayment,
    /// The amount is more than `multiple` times the median of this payee's earlier
    /// payments in the same currency (`median_minor`).
    AmountAboveUsual { multiple: u32, median_minor: i64 },
    /// The directory has not verified the payee.
    UnverifiedPayee,
    /// The directory could not describe the payee.
    UnknownPayee,
    /// Another payment of the tenant to this payee, made within [`DUPLICATE_WINDOW`] and
    /// not failed, cancelled, rejected or expired, is for the same invoice or of the same
    /// amount (`same`); `operation_id` names it.
    PossibleDuplicate {
        operation_id: String,
        same: DuplicateOf,
    },
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
    history: &[PastPayment],
    median_multiple: u32,
) -> Vec<RiskCue> {
    let mut out = Vec::new();
    let to_payee: Vec<&PastPayment> = history
        .iter()
        .filter(|p| p.beneficiary_id == asked.beneficiary_id)
        .collect();
    if !payee.known {
        out.push(RiskCue::UnknownPayee);
    } else if payee.verified == Some(false) {
        out.push(RiskCue::UnverifiedPayee);
    }
    if to_payee.is_empty() {
        out.push(RiskCue::FirstPaymentToPayee);
    }
    if let Some(fingerprint) = &payee.account_fingerprint {
        let seen = history
            .iter()
            .any(|p| p.account_fingerprint.as_ref() == Some(fingerprint));
        if !seen {
            out.push(RiskCue::FirstPaymentToAccount);
        }
        // History is oldest first: the last payment to this payee is the last one here.
        let last = to_payee
            .iter()
            .rev()
            .find_map(|p| p.account_fingerprint.as_ref());
        if last.is_some_and(|last| last != fingerprint) {
            out.push(RiskCue::AccountChangedSinceLastPayment);
        }
    }
    let mut amounts: Vec<i64> = to_payee
        .iter()
        .filter(|p| p.currency == asked.currency)
        .map(|p| p.amount_minor)
        .collect();
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

/// The median (the lower middle of an even count, so it is always an amount that was
/// really paid).
fn median(amounts: &mut [i64]) -> Option<i64> {
    if amounts.is_empty() {
        return None;
    }
    amounts.sort_unstable();
    Some(amounts[(amounts.len() - 1) / 2])
}

#[cfg(test)]
mod tests;
