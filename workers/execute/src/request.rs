//! The provider request, derived from the approved snapshot alone (INV-2): every attempt
//! of an operation sends the same body under the same key.

use fleet_core::Action;
use fleet_providers::{PaymentRequest, RefundRequest};
use fleet_store::OperationRow;
use serde_json::Value;

pub enum ProviderRequest {
    Payment(PaymentRequest),
    Refund(RefundRequest),
}

fn text(payload: &Value, field: &str) -> Option<String> {
    payload.get(field)?.as_str().map(str::to_owned)
}

/// `None` when the stored payload does not fit the action: impossible for rows prepare
/// wrote (it validated the same shape), so the caller treats it as an invariant breach.
pub fn build(row: &OperationRow) -> Option<ProviderRequest> {
    let p = &row.payload;
    let amount_minor = p.get("amount_minor")?.as_i64()?;
    match Action::parse(&row.action)? {
        Action::PaymentCreate => Some(ProviderRequest::Payment(PaymentRequest {
            amount_minor,
            currency: text(p, "currency")?,
            beneficiary_id: text(p, "beneficiary_id")?,
            invoice_id: text(p, "invoice_id")?,
            reference: row.operation_id.clone(),
        })),
        Action::RefundCreate => Some(ProviderRequest::Refund(RefundRequest {
            payment_id: text(p, "payment_id")?,
            amount_minor,
            currency: text(p, "currency")?,
            reason: text(p, "reason")?,
            reference: row.operation_id.clone(),
        })),
        Action::CrmDealCreate | Action::CrmDealUpdate => None,
    }
}
