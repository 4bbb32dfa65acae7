//! The approved snapshot and its hash (docs/protocol.md): RFC 8785 canonical JSON of
//! exactly the snapshot members, SHA-256, `sha256:` + lower-case hex. Any agent with an RFC 8785
//! library computes the same value, so the hash a person approves can be checked anywhere.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::ids::PayloadHash;

/// The members that make up what a person approves. `rationale` and `supersedes` are
/// deliberately absent: they explain or link, they do not change the effect.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub operation_id: String,
    pub tenant_id: String,
    pub action: String,
    pub provider: String,
    pub target: Option<String>,
    pub payload: Value,
    pub policy_version: String,
    pub data_version: String,
}

impl Snapshot {
    pub fn to_json(&self) -> Value {
        json!({
            "operation_id": self.operation_id,
            "tenant_id": self.tenant_id,
            "action": self.action,
            "provider": self.provider,
            "target": self.target,
            "payload": self.payload,
            "policy_version": self.policy_version,
            "data_version": self.data_version,
        })
    }

    pub fn hash(&self) -> PayloadHash {
        hash_value(&self.to_json())
    }
}

/// RFC 8785 serialisation of `value`.
pub fn canonical_json(value: &Value) -> String {
    // Serialising a serde_json::Value cannot fail: it has only string keys and finite
    // numbers (JSON has no NaN or infinity, and a number that overflows a double was
    // refused by the strict reading). Numbers are written as ECMAScript writes doubles.
    serde_json_canonicalizer::to_string(value).expect("a JSON value always canonicalises")
}

pub fn hash_value(value: &Value) -> PayloadHash {
    PayloadHash::from_digest(&Sha256::digest(canonical_json(value).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_sorts_keys_and_drops_whitespace() {
        let v: Value = serde_json::from_str(r#"{ "b": 1, "a": {"d": "é", "c": [1, 2]} }"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":{"c":[1,2],"d":"é"},"b":1}"#);
    }

    #[test]
    fn hash_of_empty_object_is_sha256_of_braces() {
        assert_eq!(
            hash_value(&json!({})).as_str(),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
