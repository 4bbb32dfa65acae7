//! The provider request, derived from the approved snapshot alone
//! (docs/design.md#same-request): every attempt
//! of an operation sends the same body (and, for payments, the same key).

use fleet_core::Action;
use fleet_providers::{DealRequest, PaymentRequest, RefundRequest};
use fleet_store::OperationRow;
use serde_json::Value;

pub enum ProviderRequest {
    Payment(PaymentRequest),
    Refund(RefundRequest),
    DealCreate(DealRequest),
    DealUpdate { deal_id: String, expected_version: i64, patch: Value },
}

impl ProviderRequest {
    /// Sent with an idempotency key the provider deduplicates (for a limited time).
    pub fn keyed(&self) -> bool {
        match self {
            ProviderRequest::Payment(_) | ProviderRequest::Refund(_) => true,
            ProviderRequest::DealCreate(_) | ProviderRequest::DealUpdate { .. } => false,
        }
    }
}

fn text(payload: &Value, field: &str) -> Option<String> {
    payload.get(field)?.as_str().map(str::to_owned)
}

fn amount(payload: &Value) -> Option<i64> {
    payload.get("amount_minor")?.as_i64()
}

/// `None` when the stored payload does not fit the action: impossible for rows prepare
/// wrote (it validated the same shape), so the caller treats it as an invariant breach.
pub fn build(row: &OperationRow) -> Option<ProviderRequest> {
    let p = &row.payload;
    let reference = row.operation_id.clone();
    match Action::parse(&row.action)? {
        Action::PaymentCreate => Some(ProviderRequest::Payment(PaymentRequest {
            amount_minor: amount(p)?,
            currency: text(p, "currency")?,
            beneficiary_id: text(p, "beneficiary_id")?,
            invoice_id: text(p, "invoice_id")?,
            reference,
        })),
        Action::RefundCreate => Some(ProviderRequest::Refund(RefundRequest {
            payment_id: text(p, "payment_id")?,
            amount_minor: amount(p)?,
            currency: text(p, "currency")?,
            reason: text(p, "reason")?,
            reference,
        })),
        Action::CrmDealCreate => Some(ProviderRequest::DealCreate(DealRequest {
            external_id: reference,
            name: text(p, "name")?,
            amount_minor: amount(p)?,
            currency: text(p, "currency")?,
            stage: text(p, "stage")?,
            owner_id: text(p, "owner_id")?,
        })),
        Action::CrmDealUpdate => Some(ProviderRequest::DealUpdate {
            deal_id: row.target.clone()?,
            expected_version: p.get("expected_version")?.as_i64()?,
            patch: p.get("patch")?.clone(),
        }),
    }
}
