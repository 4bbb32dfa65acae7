//! A key as a bundle carries it (`{"algorithm", "public_key", "rp_id", "origin",
//! "registered_at", "removed_at"}`), read by every check that verifies a signature with
//! it: approvals, mandates and key registrations.

use serde_json::Value;

use crate::signing::PublicKey;

pub(super) fn public_key(key: &Value) -> Option<PublicKey> {
    let bytes = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        key["public_key"].as_str()?,
    )
    .ok()?;
    PublicKey::stored(
        key["algorithm"].as_str()?,
        &bytes,
        key["rp_id"].as_str(),
        key["origin"].as_str(),
    )
}

pub(super) fn key_valid_at(key: &Value, at: &str) -> bool {
    let registered = key["registered_at"].as_str().unwrap_or("~");
    registered <= at
        && key["removed_at"]
            .as_str()
            .is_none_or(|removed| removed > at)
}
