//! Identifier newtypes: parsed once at the edge, trusted afterwards.

use std::fmt;

/// `op_` + a 26-character ULID (Crockford base32, upper case), supplied by the agent so
/// that a redelivered intent names the same operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperationId(String);

const CROCKFORD: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

impl OperationId {
    pub fn parse(s: &str) -> Result<Self, String> {
        let ulid = s
            .strip_prefix("op_")
            .ok_or("operation_id must start with op_")?;
        if ulid.len() != 26 || !ulid.chars().all(|c| CROCKFORD.contains(c)) {
            return Err(
                "operation_id must be op_ followed by a 26-character upper-case ULID".into(),
            );
        }
        // A ULID's first character encodes the top 3 bits of a 128-bit value.
        if ulid.as_bytes()[0] > b'7' {
            return Err("operation_id ULID is out of range".into());
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The idempotency key sent to providers: the operation id itself (docs/protocol.md),
    /// the same on every attempt, forever.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        IdempotencyKey(self.0.clone())
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `sha256:` + 64 lower-case hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PayloadHash(String);

impl PayloadHash {
    pub(crate) fn from_digest(digest: &[u8]) -> Self {
        Self(format!("sha256:{}", hex::encode(digest)))
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        let digits = s
            .strip_prefix("sha256:")
            .ok_or("a payload hash starts with sha256:")?;
        if digits.len() != 64
            || !digits
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err("a payload hash is sha256: followed by 64 lower-case hex digits".into());
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PayloadHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_op_plus_ulid() {
        assert!(OperationId::parse("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8").is_ok());
        for bad in [
            "01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
            "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A",
            "op_01jq8r7d9m4kx2t3v4w5y6z7a8",
            "op_01JQ8R7D9M4KX2T3V4W5Y6Z7AU",
            "op_81JQ8R7D9M4KX2T3V4W5Y6Z7A8",
            "",
        ] {
            assert!(OperationId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn payload_hashes_are_prefixed_lower_hex() {
        let ok = format!("sha256:{}", "a".repeat(64));
        assert!(PayloadHash::parse(&ok).is_ok());
        assert!(PayloadHash::parse(&ok.to_uppercase()).is_err());
        assert!(PayloadHash::parse("sha256:abc").is_err());
        assert!(PayloadHash::parse(&"a".repeat(64)).is_err());
    }
}
