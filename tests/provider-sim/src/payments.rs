//! Payments: validation of `POST /v1/payments` bodies, the beneficiary precondition, and
//! the business rules that reject a payment definitively (402): a beneficiary not in the
//! directory, or one whose id starts with `closed_`.
//!
//! `beneficiary_version` (optional) is a precondition: when the beneficiary is in the
//! directory at another version, the answer is `409 precondition_failed` /
//! `beneficiary_changed` with its `current_version`. It is checked with the body, before
//! the key is claimed, so nothing is created and nothing is saved under the key: the same
//! request gets the same 409 while the version differs.

use serde_json::Value;

use crate::api_error::ApiError;
use crate::fields::Fields;
use crate::ledger::{Ledger, Payment};
use crate::resource::{NewObject, Resource};
use crate::route::Route;
use crate::state::SimState;

const FIELDS: &[&str] = &[
    "amount_minor",
    "currency",
    "beneficiary_id",
    "invoice_id",
    "reference",
    "beneficiary_version",
];

/// Beneficiary id prefixes that make the provider reject the payment, and with what code.
const REJECTED_BENEFICIARIES: &[(&str, &str)] = &[("closed_", "account_closed")];

#[derive(Debug)]
pub struct PaymentParams {
    amount_minor: i64,
    currency: String,
    beneficiary_id: String,
    invoice_id: String,
    reference: String,
}

impl Resource for Payment {
    const CREATE: Route = Route::CreatePayment;
    const SEARCH: Route = Route::SearchPayments;
    const GET: Route = Route::GetPayment;
    type Params = PaymentParams;

    fn ledger(state: &SimState) -> &Ledger<Self> {
        &state.payments
    }

    fn ledger_mut(state: &mut SimState) -> &mut Ledger<Self> {
        &mut state.payments
    }

    fn validate(body: &Value, state: &SimState) -> Result<PaymentParams, ApiError> {
        let fields = Fields::of(body, FIELDS)?;
        let beneficiary_id = fields.text("beneficiary_id")?;
        if let Some(expected) = fields.optional_version("beneficiary_version")? {
            let current = state.beneficiaries.get(&beneficiary_id).map(|b| b.version);
            match current {
                Some(current) if current != expected => {
                    return Err(ApiError::beneficiary_changed(current))
                }
                // Unknown: refused 402 at execution, saved under the key as before.
                Some(_) | None => {}
            }
        }
        Ok(PaymentParams {
            amount_minor: fields.amount("amount_minor")?,
            currency: fields.currency("currency")?,
            beneficiary_id,
            invoice_id: fields.text("invoice_id")?,
            reference: fields.text("reference")?,
        })
    }

    fn execute(
        params: PaymentParams,
        state: &SimState,
        new: NewObject,
    ) -> Result<Payment, ApiError> {
        if state.beneficiaries.get(&params.beneficiary_id).is_none() {
            return Err(ApiError::rejected("invalid_beneficiary"));
        }
        let rejected = REJECTED_BENEFICIARIES
            .iter()
            .find(|(prefix, _)| params.beneficiary_id.starts_with(prefix));
        if let Some((_, code)) = rejected {
            return Err(ApiError::rejected(code));
        }
        Ok(Payment {
            id: format!("pay_{}", ulid::Ulid::new()),
            // Customer data a payment answer echoes, unlike the directory's: tests check
            // that the fleet keeps none of it.
            beneficiary_name: format!("Account holder of {}", params.beneficiary_id),
            description: format!("Payment of invoice {}", params.invoice_id),
            status: new.status,
            amount_minor: params.amount_minor,
            currency: params.currency,
            beneficiary_id: params.beneficiary_id,
            invoice_id: params.invoice_id,
            reference: params.reference,
            created_at: new.created_at,
        })
    }
}
