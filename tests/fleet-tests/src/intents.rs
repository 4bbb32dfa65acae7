//! intent.v1 messages for tests, each with a fresh operation id.

use serde_json::{json, Value};

/// The seed's payment (inv_9182, 12,500.00 KZT to vendor_77) under a fresh id.
pub fn intent() -> Value {
    json!({
        "schema": "intent.v1",
        "operation_id": format!("op_{}", ulid::Ulid::new()),
        "tenant_id": "org_482",
        "action": "payment.create",
        "provider": "payments",
        "target": null,
        "payload": {"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"},
        "policy_version": "payments-v3",
        "data_version": "inv_9182@7",
        "approval_ttl_seconds": 3600,
        "rationale": "Invoice is due today and matches PO 5531.",
        "supersedes": null
    })
}

pub fn with_amount(mut intent: Value, amount: Value) -> Value {
    intent["payload"]["amount_minor"] = amount;
    intent
}

pub fn intent_bytes(intent: &Value) -> Vec<u8> {
    serde_json::to_vec(intent).unwrap()
}
