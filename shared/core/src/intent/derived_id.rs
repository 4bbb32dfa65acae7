//! The operation id of a proposal that names none (the MCP door). A tool call the agent's
//! framework retries, because an answer was lost or the model called the tool again with
//! the same arguments, must be the same operation, not a second payment. So the id is
//! derived from what the call proposes, not drawn at random: the same proposal always
//! gets the same id, and the intake's idempotency by operation id does the rest.
//!
//! The id is `op_` + the ULID text of the first 128 bits of SHA-256 over the RFC 8785
//! form of
//!
//! ```json
//! {"derivation": "fleet.proposal.v1", "tenant_id": …, "action": …, "target": …,
//!  "payload": …, "supersedes": …}
//! ```
//!
//! (`target` and `supersedes` `null` when absent), so an agent can compute it itself. It
//! matches the operation id rule: 26 Crockford base-32 characters, the first one `0`–`7`
//! (it holds the top 3 of the 128 bits). Its "timestamp" part is hash bits, not a time:
//! nothing in fleet reads a time out of an operation id.
//!
//! What is left out is deliberate. `rationale` explains and may be worded anew on every
//! retry. `policy_version`, `data_version` and `approval_ttl_seconds` are not the effect:
//! the same payload with another of them maps to the same id, and the intake refuses the
//! second snapshot under it (`operation_id_conflict`) instead of storing a second
//! operation. Proposing the same effect again on purpose (a second instalment of one
//! invoice) takes an explicit `operation_id`.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::catalogue::Action;
use crate::hash::canonical_json;
use crate::ids::CROCKFORD;

/// Names the derivation, so that a change of it is a new name and never a silent change
/// of the ids.
pub const DERIVATION: &str = "fleet.proposal.v1";

/// The operation id of a proposal of `action` for `tenant` with these `arguments` (the
/// tool's, as the agent gave them).
pub fn derived_operation_id(
    action: Action,
    tenant: &str,
    arguments: &Map<String, Value>,
) -> String {
    let member = |name: &str| arguments.get(name).cloned().unwrap_or(Value::Null);
    let proposed = json!({
        "derivation": DERIVATION,
        "tenant_id": tenant,
        "action": action.wire_name(),
        "target": member("target"),
        "payload": member("payload"),
        "supersedes": member("supersedes"),
    });
    let digest = Sha256::digest(canonical_json(&proposed).as_bytes());
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    format!("op_{}", ulid_text(u128::from_be_bytes(first)))
}

/// A 128-bit value as a ULID's 26 characters: 5 bits each, the first holding the top 3.
fn ulid_text(value: u128) -> String {
    let alphabet = CROCKFORD.as_bytes();
    (0..26)
        .map(|i| {
            let shift = 5 * (25 - i);
            char::from(alphabet[((value >> shift) & 0x1f) as usize])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ids::OperationId;

    fn arguments(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    /// The seed payment's arguments: the intent as the fixtures keep it, less what the
    /// tool implies, its id and its tenant.
    fn payment() -> Map<String, Value> {
        let mut seed = arguments(
            serde_json::from_str(include_str!(
                "../../tests/fixtures/intents/valid/payment-seed.json"
            ))
            .unwrap(),
        );
        for member in ["schema", "action", "provider", "operation_id", "tenant_id"] {
            seed.remove(member);
        }
        seed
    }

    fn id(arguments: &Map<String, Value>) -> String {
        derived_operation_id(Action::PaymentCreate, "org_482", arguments)
    }

    #[test]
    fn the_same_proposal_gets_the_same_valid_id() {
        let first = id(&payment());
        assert_eq!(first, id(&payment()));
        OperationId::parse(&first).unwrap();
        assert!(first.starts_with("op_") && first.len() == 29, "{first}");
    }

    #[test]
    fn key_order_number_spelling_and_the_explaining_members_do_not_change_it() {
        let mut again = arguments(json!({
            "rationale": "another wording",
            "approval_ttl_seconds": 60,
            "data_version": "inv_9182@8",
            "policy_version": "payments-v4",
            "payload": {"currency": "KZT", "amount_minor": 1.25e6,
                        "beneficiary_id": "vendor_77", "invoice_id": "inv_9182"},
        }));
        assert_eq!(id(&again), id(&payment()));
        again.insert("supersedes".into(), Value::Null);
        assert_eq!(id(&again), id(&payment()));
    }

    #[test]
    fn another_effect_tenant_action_target_or_replacement_is_another_id() {
        let base = id(&payment());
        let mut other = payment();
        other["payload"]["amount_minor"] = json!(1250001);
        assert_ne!(id(&other), base);
        assert_ne!(
            derived_operation_id(Action::PaymentCreate, "org_483", &payment()),
            base
        );
        assert_ne!(
            derived_operation_id(Action::RefundCreate, "org_482", &payment()),
            base
        );
        let mut targeted = payment();
        targeted.insert("target".into(), json!("deal_7"));
        assert_ne!(id(&targeted), base);
        let mut replacing = payment();
        replacing.insert("supersedes".into(), json!("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"));
        assert_ne!(id(&replacing), base);
    }

    #[test]
    fn the_ulid_text_covers_the_whole_range() {
        assert_eq!(ulid_text(0), "0".repeat(26));
        assert_eq!(ulid_text(u128::MAX), format!("7{}", "Z".repeat(25)));
        assert_eq!(ulid_text(31), format!("{}Z", "0".repeat(25)));
    }

    /// The documented recipe, written out: an agent that computes the id gets this one.
    #[test]
    fn the_id_is_the_documented_hash() {
        let text = r#"{"action":"payment.create","derivation":"fleet.proposal.v1","payload":{"amount_minor":1250000,"beneficiary_id":"vendor_77","currency":"KZT","invoice_id":"inv_9182"},"supersedes":null,"target":null,"tenant_id":"org_482"}"#;
        let digest = Sha256::digest(text.as_bytes());
        let n = u128::from_be_bytes(digest[..16].try_into().unwrap());
        assert_eq!(id(&payment()), format!("op_{}", ulid_text(n)));
    }
}
