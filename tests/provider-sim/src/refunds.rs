//! Refunds: validation of `POST /v1/refunds` bodies against the payment they refund.
//!
//! The simulator deliberately does NOT refuse a refund that, added to earlier refunds,
//! exceeds the payment: a duplicate refund must show up as a second effect that tests
//! can count, not be hidden by the provider.

use serde_json::Value;

use crate::api_error::ApiError;
use crate::fields::Fields;
use crate::ledger::{Ledger, Payment, Refund};
use crate::resource::{NewObject, Resource};
use crate::route::Route;
use crate::state::SimState;

const FIELDS: &[&str] = &[
    "payment_id",
    "amount_minor",
    "currency",
    "reason",
    "reference",
];

#[derive(Debug)]
pub struct RefundParams {
    payment_id: String,
    amount_minor: i64,
    currency: String,
    reason: String,
    reference: String,
}

impl Resource for Refund {
    const CREATE: Route = Route::CreateRefund;
    const SEARCH: Route = Route::SearchRefunds;
    const GET: Route = Route::GetRefund;
    type Params = RefundParams;

    fn ledger(state: &SimState) -> &Ledger<Self> {
        &state.refunds
    }

    fn ledger_mut(state: &mut SimState) -> &mut Ledger<Self> {
        &mut state.refunds
    }

    fn validate(body: &Value, state: &SimState) -> Result<RefundParams, ApiError> {
        let fields = Fields::of(body, FIELDS)?;
        let params = RefundParams {
            payment_id: fields.text("payment_id")?,
            amount_minor: fields.amount("amount_minor")?,
            currency: fields.currency("currency")?,
            reason: fields.text("reason")?,
            reference: fields.text("reference")?,
        };
        check_against_payment(&params, state)?;
        Ok(params)
    }

    fn execute(params: RefundParams, state: &SimState, new: NewObject) -> Result<Refund, ApiError> {
        // Checked again: the payment could have gone (admin reset) during a delay fault.
        check_against_payment(&params, state)?;
        Ok(Refund {
            id: format!("re_{}", ulid::Ulid::new()),
            status: new.status,
            payment_id: params.payment_id,
            amount_minor: params.amount_minor,
            currency: params.currency,
            reason: params.reason,
            reference: params.reference,
            created_at: new.created_at,
        })
    }
}

fn check_against_payment(params: &RefundParams, state: &SimState) -> Result<(), ApiError> {
    let payment: &Payment = state
        .payments
        .get(&params.payment_id)
        .ok_or_else(|| ApiError::invalid("resource_missing", "payment_id"))?;
    if payment.currency != params.currency {
        return Err(ApiError::invalid("currency_mismatch", "currency"));
    }
    if params.amount_minor > payment.amount_minor {
        return Err(ApiError::invalid("amount_too_large", "amount_minor"));
    }
    Ok(())
}
