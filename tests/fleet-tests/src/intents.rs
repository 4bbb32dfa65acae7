//! intent.v1 messages for tests, each with a fresh operation id.

use serde_json::{json, Value};

/// The seed's payment (inv_9182, 12,500.00 KZT to vendor_77), as the intent fixtures keep
/// it, under a fresh id.
pub fn intent() -> Value {
    let mut intent: Value = serde_json::from_str(include_str!(
        "../../../shared/core/tests/fixtures/intents/valid/payment-seed.json"
    ))
    .expect("the seed fixture is JSON");
    intent["operation_id"] = json!(format!("op_{}", ulid::Ulid::new()));
    intent
}

pub fn with_amount(mut intent: Value, amount: Value) -> Value {
    intent["payload"]["amount_minor"] = amount;
    intent
}

/// Payment payload members that would show as another id on screen, with the field a
/// refusal names: a right-to-left override around the reversed id (drawn as `vendor_77`),
/// a zero-width space, a Cyrillic `е` among Latin letters, an all-Cyrillic look-alike of
/// `scope`.
pub const SPOOFED_IDS: [(&str, &str, &str); 4] = [
    (
        "beneficiary_id",
        "payload.beneficiary_id",
        "\u{202E}77_rodnev\u{202C}",
    ),
    ("invoice_id", "payload.invoice_id", "inv\u{200B}_9182"),
    (
        "beneficiary_id",
        "payload.beneficiary_id",
        "v\u{0435}ndor_77",
    ),
    (
        "beneficiary_id",
        "payload.beneficiary_id",
        "\u{0455}\u{0441}\u{043E}\u{0440}\u{0435}",
    ),
];

/// An id in one script other than Latin and like no ASCII id: accepted.
pub const NON_LATIN_ID: &str = "λογαριασμός_7";

/// `intent` with its payload's `member` set to `value`.
pub fn with_payload_member(mut intent: Value, member: &str, value: &str) -> Value {
    intent["payload"][member] = json!(value);
    intent
}

pub fn intent_bytes(intent: &Value) -> Vec<u8> {
    serde_json::to_vec(intent).unwrap()
}

fn base(
    action: &str,
    provider: &str,
    target: Value,
    payload: Value,
    policy: &str,
    data_version: &str,
) -> Value {
    let mut i = intent();
    i["action"] = json!(action);
    i["provider"] = json!(provider);
    i["target"] = target;
    i["payload"] = payload;
    i["policy_version"] = json!(policy);
    i["data_version"] = json!(data_version);
    i
}

/// A refund of `payment_id` (a payment the simulator holds).
pub fn refund_intent(payment_id: &str, amount_minor: i64) -> Value {
    let payload = json!({"payment_id": payment_id, "amount_minor": amount_minor, "currency": "KZT", "reason": "duplicate invoice"});
    base(
        "refund.create",
        "payments",
        Value::Null,
        payload,
        "refunds-v1",
        &format!("{payment_id}@1"),
    )
}

/// A charge of `amount_minor` KZT to `customer`'s saved `payment_method` (at Stripe).
pub fn charge_intent(customer: &str, payment_method: &str, amount_minor: i64) -> Value {
    let payload = json!({"invoice_id": "inv_1042", "customer": customer,
                         "payment_method": payment_method, "amount_minor": amount_minor,
                         "currency": "KZT"});
    base(
        "charge.create",
        "payments",
        Value::Null,
        payload,
        "charges-v1",
        "inv_1042@1",
    )
}

pub fn deal_create_intent() -> Value {
    let payload = json!({"name": "Acme renewal", "amount_minor": 990000, "currency": "EUR", "stage": "proposal", "owner_id": "u_7"});
    base(
        "crm.deal.create",
        "crm",
        Value::Null,
        payload,
        "crm-v1",
        "acct_9@3",
    )
}

pub fn deal_update_intent(deal_id: &str, expected_version: i64, patch: Value) -> Value {
    let payload = json!({"expected_version": expected_version, "patch": patch});
    base(
        "crm.deal.update",
        "crm",
        json!(deal_id),
        payload,
        "crm-v1",
        &format!("{deal_id}@{expected_version}"),
    )
}

/// Moves `order_id` from `from` to `to` (an order the simulator holds).
pub fn order_change_intent(order_id: &str, from: &str, to: &str) -> Value {
    let payload = json!({"from": from, "to": to, "reason": "Shipped by carrier"});
    base(
        "order.status.change",
        "orders",
        json!(order_id),
        payload,
        "orders-v1",
        &format!("{order_id}@{from}"),
    )
}

/// The SHA-256 of the document the tests' contracts send.
pub const CONTRACT_SHA256: &str =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/// Sends template `tpl_msa_v3` to `recipient_id`. The approval window (30 min) stays
/// inside the e-signature key's hour.
pub fn contract_intent(recipient_id: &str) -> Value {
    let payload = json!({"template_id": "tpl_msa_v3", "recipient_id": recipient_id, "document_sha256": CONTRACT_SHA256, "subject": "Master services agreement"});
    let mut i = base(
        "contract.send",
        "esign",
        Value::Null,
        payload,
        "contracts-v1",
        &format!("{recipient_id}@12"),
    );
    i["approval_ttl_seconds"] = json!(1800);
    i
}
