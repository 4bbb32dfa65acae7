//! The evidence bundle of one operation: one self-contained RFC 8785 document that proves,
//! without the database or the network, what was approved, by whom, under which policy,
//! and what the provider said, signed by the deployment's evidence key.
//!
//! ```json
//! {"format":"fleet.evidence.v1","operation_id":"op_…","tenant_id":"org_1","made_at":"…",
//!  "parts":{"snapshot":{…},"policy":{…},"approvals":[…],"mandates":[…],"attempts":[…],
//!           "provider":{…},"events":[…],"payee":…,"operation":{…}},
//!  "digests":{"snapshot":"sha256:…",…},
//!  "cannot_prove":["…"],
//!  "signature":{"algorithm":"ed25519","key_id":"ed25519:…","public_key":"…","value":"…"}}
//! ```
//!
//! `digests` holds the SHA-256 of each part's canonical JSON, so a verifier names the part
//! a changed byte is in; the deployment's signature covers the canonical JSON of the whole
//! document without `signature`. Each approval carries the statement its approver signed
//! (derived from the stored snapshot, as the verifier of an approval derives it), the
//! signature and the key with its registration, so the approver's signature is checked
//! on its own. Pure: the API gathers the records (`fleet_operation_evidence`) and the key.

mod assemble;
mod bundle_keys;
mod chain;
mod findings;
mod mandates;
mod verify;

pub use assemble::{assemble, sign};
pub use findings::{Finding, Report};
pub use verify::{verify, Trust};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::hash::canonical_json;

/// The bundle's format: a verifier refuses another rather than guess.
pub const FORMAT: &str = "fleet.evidence.v1";

/// The parts, in the order a verifier reports them.
pub const PARTS: [&str; 9] = [
    "snapshot",
    "policy",
    "approvals",
    "mandates",
    "attempts",
    "provider",
    "events",
    "payee",
    "operation",
];

/// `sha256:` + hex of the canonical JSON of `part`.
pub fn digest(part: &Value) -> String {
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical_json(part).as_bytes()))
    )
}

/// The bytes the deployment signs: the document without its `signature`, canonical.
pub fn signed_bytes(doc: &Value) -> Vec<u8> {
    let mut unsigned = doc.clone();
    if let Some(map) = unsigned.as_object_mut() {
        map.remove("signature");
    }
    canonical_json(&unsigned).into_bytes()
}

#[cfg(test)]
mod tests;
