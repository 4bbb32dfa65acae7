//! Payments: validation of `POST /v1/payments` bodies and the business rules that reject
//! a payment definitively (402) by magic beneficiary prefixes.

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
];

/// Beneficiary id prefixes that make the provider reject the payment, and with what code.
const REJECTED_BENEFICIARIES: &[(&str, &str)] = &[
    ("closed_", "account_closed"),
    ("invalid_", "invalid_beneficiary"),
];

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

    fn validate(body: &Value, _state: &SimState) -> Result<PaymentParams, ApiError> {
        let fields = Fields::of(body, FIELDS)?;
        Ok(PaymentParams {
            amount_minor: fields.amount("amount_minor")?,
            currency: fields.currency("currency")?,
            beneficiary_id: fields.text("beneficiary_id")?,
            invoice_id: fields.text("invoice_id")?,
            reference: fields.text("reference")?,
        })
    }

    fn execute(
        params: PaymentParams,
        _state: &SimState,
        new: NewObject,
    ) -> Result<Payment, ApiError> {
        let rejected = REJECTED_BENEFICIARIES
            .iter()
            .find(|(prefix, _)| params.beneficiary_id.starts_with(prefix));
        if let Some((_, code)) = rejected {
            return Err(ApiError::rejected(code));
        }
        Ok(Payment {
            id: format!("pay_{}", ulid::Ulid::new()),
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
