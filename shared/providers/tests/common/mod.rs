//! What the provider tests share.

use fleet_core::{Action, Subject};
use fleet_providers::Operation;
use serde_json::Value;

/// The operation of `action` on `payload` for `tenant`, as the fleet sends it: `key` is
/// both its reference and its idempotency key; no target, no payee version.
pub fn operation<'a>(
    action: Action,
    tenant: &'a str,
    key: &'a str,
    payload: &'a Value,
) -> Operation<'a> {
    Operation {
        action,
        tenant,
        subject: Subject {
            reference: key,
            target: None,
            payload,
        },
        idempotency_key: key,
        payee_version: None,
    }
}
