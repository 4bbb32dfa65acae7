//! `charge.create` spoken as Stripe: what the answer to `POST /v1/payment_intents` and a
//! PaymentIntent object prove, and who is charged (pure rules, no HTTP).
//!
//! - A PaymentIntent reads by its status ([`read_payment_intent`]): `succeeded` is final,
//!   `processing` is still in Stripe's hands, `requires_action` (the customer must
//!   authenticate, which an off-session charge cannot ask) and a failed confirmation
//!   (`requires_payment_method` with its `last_payment_error`) are failures.
//! - The answer to the create ([`classify_charge`]) reads as a refund's does, with
//!   Stripe's card errors (402, `card_error`) failing with the decline's own code.
//! - Who is charged ([`payer_evidence`]): the customer and the payment method as Stripe
//!   describes them at intake, frozen as the operation's payee evidence, which the
//!   approver is shown and execute reads again before it charges ([`same_payer`]).
//!
//! Stripe's reference: PaymentIntents <https://docs.stripe.com/api/payment_intents/object>,
//! declines <https://docs.stripe.com/declines/codes>, payment methods
//! <https://docs.stripe.com/api/payment_methods/object>.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::lookup::{Found, Reading};
use crate::outcome::{unknown, CallResult, Outcome};
use crate::payee::{Payee, PayeeAccount, PayeeEvidence, UnknownPayee};
use crate::reason::Reason;
use crate::refusal::IntakeRefusal;
use crate::stripe::operation_of;

/// The payload member of a charge naming who pays (the saved payment method): the
/// action's payee member, said as who is charged rather than who is paid.
pub const PAYER_MEMBER: &str = "payment_method";

/// The metadata key naming the invoice a charge collects.
pub const INVOICE_METADATA: &str = "fleet_invoice";

/// The failure of a charge the customer would have to authenticate: an off-session
/// charge cannot ask them, so the agent is told the customer must authenticate.
pub const AUTHENTICATION_REQUIRED: &str = "authentication_required";

/// Reads a Stripe PaymentIntent. `None` for anything else, or a status that proves
/// nothing yet (`requires_confirmation`, `requires_capture`: never sent by the fleet,
/// which confirms and captures at once).
pub fn read_payment_intent(object: &Value) -> Option<Found> {
    if object.get("object").and_then(Value::as_str) != Some("payment_intent") {
        return None;
    }
    let external_id = object.get("id")?.as_str()?.to_owned();
    let failed = |code: String| {
        Some(Found::Failed {
            external_id: external_id.clone(),
            code,
        })
    };
    match object.get("status")?.as_str()? {
        "succeeded" => Some(Found::Succeeded { external_id }),
        "processing" => Some(Found::Pending { external_id }),
        "requires_action" => failed(AUTHENTICATION_REQUIRED.to_owned()),
        "requires_payment_method" => failed(
            decline_code(object.get("last_payment_error"))
                .unwrap_or("payment_failed")
                .to_owned(),
        ),
        "canceled" => failed(
            object
                .get("cancellation_reason")
                .and_then(Value::as_str)
                .map_or("payment_intent_canceled".to_owned(), |r| {
                    format!("canceled_{r}")
                }),
        ),
        _ => None,
    }
}

/// The most precise code of a Stripe error: the issuer's `decline_code` when given, else
/// its `code`.
fn decline_code(error: Option<&Value>) -> Option<&str> {
    let error = error?;
    let text = |name: &str| {
        error
            .get(name)
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
    };
    text("decline_code").or_else(|| text("code"))
}

/// What the answer to `POST /v1/payment_intents` proves.
///
/// - 200 with a PaymentIntent: its status ([`read_payment_intent`]); unreadable: unknown.
/// - 402 (`card_error`): declined; the failure is Stripe's `decline_code`, else its `code`
///   (`card_declined`, `insufficient_funds`, `expired_card`, `authentication_required`).
/// - `idempotency_error` (any status): escalated, never sent again.
/// - 401/403: a configuration error, escalated.
/// - 429: refused in front of Stripe: not executed (the pacer, then the same request).
/// - any other 4xx: Stripe refused it; its `code` (else `type`) is the failure.
/// - 5xx and whatever the transport lost: unknown, for reconcile.
pub fn classify_charge(call: &CallResult) -> Outcome {
    let answer = match super::refused_or_answered(call, read_payment_intent) {
        Ok(answer) => answer,
        Err(outcome) => return outcome,
    };
    let error = answer.body.get("error");
    let error_type = answer.body.pointer("/error/type").and_then(Value::as_str);
    match answer.status {
        429 => Outcome::NotExecuted {
            reason: Reason::Http(429),
        },
        400..=499 => Outcome::Failed {
            code: decline_code(error)
                .or(error_type)
                .unwrap_or("invalid_request")
                .to_owned(),
        },
        s => unknown(Reason::Http(s)),
    }
}

/// A charge's failure as the agent is told it, for the codes whose next step differs
/// (`None`: the code says it).
pub fn failure_in_words(code: &str) -> Option<&'static str> {
    Some(match code {
        AUTHENTICATION_REQUIRED | "payment_intent_authentication_failure" => {
            "the customer must authenticate this payment themselves; a charge made without \
             them cannot ask, so do not propose it again until they have"
        }
        "card_declined" | "generic_decline" | "do_not_honor" => {
            "the card was declined; do not propose the same charge again"
        }
        "insufficient_funds" => "the card has insufficient funds",
        "expired_card" => "the card has expired; the customer must save a new one",
        "incorrect_cvc" | "incorrect_number" => "the card's details are wrong",
        "lost_card" | "stolen_card" | "fraudulent" => {
            "the card was declined for the issuer's own reasons; do not propose it again"
        }
        _ => return None,
    })
}

/// Reads what a lookup of PaymentIntents returned: only those whose
/// `metadata[fleet_operation]` is `key` count.
pub fn read_payment_intents(key: &str, via: &str, objects: &[Value]) -> Reading {
    let ours = objects.iter().filter(|o| operation_of(o) == Some(key));
    crate::actions::search::read_ours(via, ours, read_payment_intent)
}

/// Why the payer of a charge cannot be what the approver is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayerRefusal {
    /// Stripe has no such customer (or it was deleted).
    CustomerUnknown,
    /// Stripe has no such payment method.
    PaymentMethodUnknown,
    /// The payment method is not attached to the customer named.
    NotCustomers,
}

impl PayerRefusal {
    pub fn refusal(self) -> IntakeRefusal {
        match self {
            PayerRefusal::CustomerUnknown => IntakeRefusal::CustomerUnknown,
            PayerRefusal::PaymentMethodUnknown => IntakeRefusal::PaymentMethodUnknown,
            PayerRefusal::NotCustomers => IntakeRefusal::PaymentMethodNotCustomers,
        }
    }

    /// The payload member the refusal is about.
    pub fn field(self) -> &'static str {
        match self {
            PayerRefusal::CustomerUnknown => "payload.customer",
            PayerRefusal::PaymentMethodUnknown | PayerRefusal::NotCustomers => {
                "payload.payment_method"
            }
        }
    }
}

/// The longest customer name or e-mail kept: Stripe is not trusted to bound them.
const MAX_TEXT_CHARS: usize = 200;

/// Who a charge takes money from, as Stripe describes them in `answer`:
/// `{"customer": <Customer or null>, "payment_method": <PaymentMethod, Card or Source, or
/// null>}` (null: 404). Kept as the operation's payee evidence: its `id` is the payment
/// method, its name the customer's name and e-mail, its account the card (brand and last
/// four) or bank account, and its fingerprint a hash of Stripe's fingerprint, so equal
/// fingerprints are the same card and the evidence fits the shape every payee has. An
/// answer that is not Stripe's documented shape is an unknown payee (`lookup_failed`),
/// judged by the policy as any unknown payee.
pub fn payer_evidence(
    customer_id: &str,
    payment_method_id: &str,
    answer: &Value,
    at: DateTime<Utc>,
) -> Result<PayeeEvidence, PayerRefusal> {
    let customer = answer.get("customer").filter(|c| !c.is_null());
    let method = answer.get("payment_method").filter(|m| !m.is_null());
    let Some(customer) = customer.filter(|c| c.get("deleted") != Some(&Value::Bool(true))) else {
        return Err(PayerRefusal::CustomerUnknown);
    };
    let Some(method) = method else {
        return Err(PayerRefusal::PaymentMethodUnknown);
    };
    let unknown = PayeeEvidence::Unknown {
        id: payment_method_id.to_owned(),
        reason: UnknownPayee::LookupFailed,
        looked_up_at: at,
    };
    if customer.get("id").and_then(Value::as_str) != Some(customer_id)
        || method.get("id").and_then(Value::as_str) != Some(payment_method_id)
    {
        return Ok(unknown);
    }
    if method.get("customer").and_then(Value::as_str) != Some(customer_id) {
        return Err(PayerRefusal::NotCustomers);
    }
    let Some(account) = instrument(method) else {
        return Ok(unknown);
    };
    let text = |name: &str| {
        customer
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.chars().count() <= MAX_TEXT_CHARS)
    };
    let name = match (text("name"), text("email")) {
        (Some(name), Some(email)) => format!("{name} <{email}>"),
        (Some(one), None) | (None, Some(one)) => one.to_owned(),
        (None, None) => customer_id.to_owned(),
    };
    Ok(PayeeEvidence::Found {
        payee: Payee {
            id: payment_method_id.to_owned(),
            name,
            country: account.country,
            account: PayeeAccount {
                scheme: account.scheme.to_owned(),
                masked: account.masked,
                fingerprint: account.fingerprint,
            },
            // Stripe checked the instrument when it was saved to the customer.
            verified: true,
            version: 1,
        },
        looked_up_at: at,
        name_check: None,
    })
}

/// A card or bank account as the approver sees it.
struct Instrument {
    scheme: &'static str,
    masked: String,
    country: String,
    fingerprint: String,
}

/// The card or bank account of a PaymentMethod (`card`, `sepa_debit`,
/// `us_bank_account`), a Card (`card_…`) or a card Source (`src_…`).
fn instrument(method: &Value) -> Option<Instrument> {
    let kind = method.get("object").and_then(Value::as_str)?;
    let (scheme, details) = match kind {
        "card" => ("card", method),
        "source" => ("card", method.get("card")?),
        "payment_method" => match method.get("type").and_then(Value::as_str)? {
            "card" => ("card", method.get("card")?),
            other => ("bank", method.get(other)?),
        },
        _ => return None,
    };
    let text = |name: &str| {
        details
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && s.len() <= 64)
    };
    let last4 = text("last4").filter(|l| l.len() == 4 && l.bytes().all(|b| b.is_ascii_digit()))?;
    let fingerprint = text("fingerprint")?;
    let label = if scheme == "card" {
        text("brand").map_or("card".to_owned(), brand_name)
    } else {
        text("bank_name").unwrap_or("bank account").to_owned()
    };
    let country = text("country")
        .map(str::to_ascii_uppercase)
        .filter(|c| c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase()))
        // Not every instrument names its country: `ZZ` says unknown (ISO 3166's
        // user-assigned code), never a guess.
        .unwrap_or_else(|| "ZZ".to_owned());
    let digest = Sha256::digest(format!("stripe:{fingerprint}").as_bytes());
    Some(Instrument {
        scheme,
        masked: format!("{label} •••• {last4}"),
        country,
        fingerprint: format!("sha256:{}", hex::encode(digest)),
    })
}

/// `visa` → `Visa`, `amex` → `American Express`: the brand as a person reads it.
fn brand_name(brand: &str) -> String {
    match brand {
        "amex" | "American Express" => "American Express".to_owned(),
        "diners" => "Diners Club".to_owned(),
        "mastercard" => "Mastercard".to_owned(),
        "unionpay" => "UnionPay".to_owned(),
        "jcb" => "JCB".to_owned(),
        other => {
            let mut chars = other.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        }
    }
}

/// Whether the payer Stripe describes now is the one the approver was shown: the same
/// payment method, still the customer's, the same card or account (masked form,
/// fingerprint, country). A changed customer name is not a changed payer.
pub fn same_payer(approved: &PayeeEvidence, now: &Result<PayeeEvidence, PayerRefusal>) -> bool {
    match (
        approved.found(),
        now.as_ref().ok().and_then(PayeeEvidence::found),
    ) {
        (Some(approved), Some(now)) => {
            approved.id == now.id
                && approved.account == now.account
                && approved.country == now.country
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
