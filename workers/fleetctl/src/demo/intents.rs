//! The demo's intents: the seed example first, then a deterministic mix that shows each
//! path: approved payments, payments the provider refuses (402), one rejected by its
//! approver, one large enough (1,500,000.00 KZT) that its policy asks for two distinct
//! approvers, both signing with their own keys, one to a payee whose bank account is
//! changed after the approver was shown it (cancelled `beneficiary_changed`: never paid),
//! order status changes (one of an order someone else moved meanwhile, which
//! is cancelled as a new decision), contracts sent through the e-signature provider
//! (accepted, then settled by its webhook), and a message that breaks the contract
//! (dead-lettered by prepare).

use fleet_core::{parse_intent, ValidIntent};
use serde_json::json;

pub struct DemoIntent {
    pub bytes: Vec<u8>,
    pub intent: ValidIntent,
    /// The approver rejects this one instead of approving it.
    pub reject: bool,
}

pub struct Plan {
    pub intents: Vec<DemoIntent>,
    /// The payee whose bank account changes between its intake and the payment: no other
    /// intent of the plan pays it.
    pub changed_payee: &'static str,
    /// A float amount: prepare must dead-letter it.
    pub invalid: Vec<u8>,
}

pub fn op_id() -> String {
    format!("op_{}", ulid::Ulid::new())
}

fn message(
    invoice: &str,
    beneficiary: &str,
    amount_minor: i64,
    currency: &str,
    rationale: &str,
) -> serde_json::Value {
    json!({
        "schema": "intent.v1",
        "operation_id": op_id(),
        "tenant_id": "org_482",
        "action": "payment.create",
        "provider": "payments",
        "target": null,
        "payload": {"invoice_id": invoice, "beneficiary_id": beneficiary, "amount_minor": amount_minor, "currency": currency},
        "policy_version": "payments-v3",
        "data_version": format!("{invoice}@1"),
        "approval_ttl_seconds": 3600,
        "rationale": rationale,
        "supersedes": null
    })
}

pub fn demo_intent(msg: serde_json::Value, reject: bool) -> DemoIntent {
    let bytes = serde_json::to_vec(&msg).expect("json serialises");
    let intent = parse_intent(&bytes).expect("the demo's intents are valid");
    DemoIntent {
        bytes,
        intent,
        reject,
    }
}

/// Moves `order_id` from `paid` to `fulfilled`.
fn order_change(order_id: &str) -> serde_json::Value {
    json!({
        "schema": "intent.v1",
        "operation_id": op_id(),
        "tenant_id": "org_482",
        "action": "order.status.change",
        "provider": "orders",
        "target": order_id,
        "payload": {"from": "paid", "to": "fulfilled", "reason": "Shipped by carrier."},
        "policy_version": "orders-v1",
        "data_version": format!("{order_id}@paid"),
        "approval_ttl_seconds": 3600,
        "rationale": "The warehouse confirmed the shipment.",
        "supersedes": null
    })
}

/// Sends the master services agreement to `recipient_id`, approvable within the
/// e-signature key's hour.
fn contract(recipient_id: &str) -> serde_json::Value {
    json!({
        "schema": "intent.v1",
        "operation_id": op_id(),
        "tenant_id": "org_482",
        "action": "contract.send",
        "provider": "esign",
        "target": null,
        "payload": {
            "template_id": "tpl_msa_v3",
            "recipient_id": recipient_id,
            "document_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "subject": "Master services agreement, 2026 renewal"
        },
        "policy_version": "contracts-v1",
        "data_version": format!("{recipient_id}@12"),
        "approval_ttl_seconds": 1800,
        "rationale": "The customer accepted the renewal quote.",
        "supersedes": null
    })
}

/// The payee "our new account" is announced for (the other payments pay `vendor_1` …
/// `vendor_9`).
const CHANGED_PAYEE: &str = "vendor_42";

/// `count` payments besides the seed, a status change of each order in `orders`, and
/// two contracts.
pub fn plan(count: usize, orders: &[String]) -> Plan {
    let mut seed = message(
        "inv_9182",
        "vendor_77",
        1_250_000,
        "KZT",
        "Invoice is due today and matches PO 5531.",
    );
    seed["data_version"] = json!("inv_9182@7");
    let mut intents = vec![demo_intent(seed, false)];
    let currencies = ["KZT", "USD", "EUR"];
    for i in 0..count {
        let n = i as i64;
        let invoice = format!("inv_{}", 9183 + n);
        // Every 10th goes to a closed account (the provider answers 402; the simulator
        // holds a hundred of them); one is rejected.
        let beneficiary = if i % 10 == 7 {
            format!("closed_vendor_{}", i % 100)
        } else {
            format!("vendor_{}", 1 + i % 9)
        };
        let amount = 10_000 + (n * 7_919) % 990_000;
        let msg = message(
            &invoice,
            &beneficiary,
            amount,
            currencies[i % 3],
            "Scheduled supplier payment.",
        );
        intents.push(demo_intent(msg, i == 4));
    }
    // payments-v3 asks for two distinct approvers at 1,000,000.00 KZT and above, both
    // approvals signed.
    let large = message(
        "inv_9300",
        "vendor_12",
        150_000_000,
        "KZT",
        "Annual licence renewal, board-approved budget line 7.",
    );
    intents.push(demo_intent(large, false));
    intents.push(demo_intent(
        message(
            "inv_9301",
            CHANGED_PAYEE,
            480_000,
            "KZT",
            "Consulting retainer for March, per the signed agreement.",
        ),
        false,
    ));
    intents.extend(
        orders
            .iter()
            .map(|order| demo_intent(order_change(order), false)),
    );
    intents.extend(
        ["cust_1042", "cust_2077"].map(|recipient| demo_intent(contract(recipient), false)),
    );
    let mut invalid = message("inv_bad", "vendor_1", 0, "USD", "amount sent as a float");
    invalid["payload"]["amount_minor"] = json!(125.5);
    Plan {
        intents,
        changed_payee: CHANGED_PAYEE,
        invalid: serde_json::to_vec(&invalid).expect("json serialises"),
    }
}
