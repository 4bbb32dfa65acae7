//! Identifier newtypes: parsed once at the edge, trusted afterwards.

use std::fmt;

/// `op_` + a 26-character ULID (Crockford base32, upper case), supplied by the agent so
/// that a redelivered intent names the same operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperationId(String);

pub(crate) const CROCKFORD: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

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

    /// The idempotency key (and the reference) sent to providers for this operation of
    /// `tenant_id`: `<tenant hash>.<operation id>`. Operation ids are unique per tenant
    /// only, so the key names the tenant too: two tenants' operations with one id never
    /// share a key at a provider, where the second would replay the first's answer
    /// (docs/design.md#tenant-boundaries). Intake stores it in the row, and every attempt,
    /// lookup and webhook match uses the stored key: an operation stored before keys named
    /// the tenant keeps its bare id.
    pub fn idempotency_key(&self, tenant_id: &str) -> IdempotencyKey {
        IdempotencyKey(format!("{}.{}", tenant_hash(tenant_id), self.0))
    }
}

/// The first 16 hex digits (64 bits) of the SHA-256 of the tenant id: short enough for
/// every provider's key and reference fields (docs/protocol.md), free of the characters a
/// tenant id may hold, and the same for a tenant forever. Two tenants whose hashes met
/// could still never share a key: the database refuses a second row with a stored key
/// (`operations_idempotency_key`).
pub fn tenant_hash(tenant_id: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(tenant_id.as_bytes())[..8])
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One operation as every read and write names it: ids are unique per tenant only
/// (docs/design.md#tenant-boundaries), so the tenant always comes with the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpRef<'a> {
    pub tenant_id: &'a str,
    pub operation_id: &'a str,
}

impl<'a> OpRef<'a> {
    pub fn new(tenant_id: &'a str, operation_id: &'a str) -> Self {
        OpRef {
            tenant_id,
            operation_id,
        }
    }

    pub fn to_key(self) -> OpKey {
        OpKey::new(self.tenant_id, self.operation_id)
    }
}

/// [`OpRef`], owned: what a sweep or a doorbell hands on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpKey {
    pub tenant_id: String,
    pub operation_id: String,
}

impl OpKey {
    pub fn new(tenant_id: impl Into<String>, operation_id: impl Into<String>) -> Self {
        OpKey {
            tenant_id: tenant_id.into(),
            operation_id: operation_id.into(),
        }
    }

    pub fn op(&self) -> OpRef<'_> {
        OpRef::new(&self.tenant_id, &self.operation_id)
    }
}

impl fmt::Display for OpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.op().fmt(f)
    }
}

impl fmt::Display for OpRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {}", self.operation_id, self.tenant_id)
    }
}

/// What providers are sent as the idempotency key and the reference of one operation:
/// `<tenant hash>.<operation id>`, or the bare operation id for a row stored before keys
/// named the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// A stored key read back: either form [`IdempotencyKey`] describes, nothing else.
    pub fn parse(s: &str) -> Result<Self, String> {
        let id = match s.split_once('.') {
            Some((hash, id)) => {
                if hash.len() != 16
                    || !hash
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                {
                    return Err(
                        "an idempotency key's tenant hash is 16 lower-case hex digits".into(),
                    );
                }
                id
            }
            None => s,
        };
        OperationId::parse(id)?;
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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

// Rows holding these serialise them as the text their columns hold, and a test or a
// caller holding a plain string compares with them directly.
macro_rules! text_newtype {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $t {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $t {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $t {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    };
}

text_newtype!(OperationId);
text_newtype!(IdempotencyKey);
text_newtype!(PayloadHash);

// Read back (the operation view holds them) through the same checks as anywhere else.
macro_rules! deserialize_by_parse {
    ($t:ty) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$t, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                <$t>::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

deserialize_by_parse!(OperationId);
deserialize_by_parse!(PayloadHash);

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
    fn keys_name_the_tenant_and_the_id() {
        let op = OperationId::parse("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8").unwrap();
        let a = op.idempotency_key("org_482");
        let b = op.idempotency_key("org_999");
        assert_ne!(a, b);
        assert_eq!(a, op.idempotency_key("org_482"), "the same on every call");
        for key in [&a, &b] {
            let (hash, id) = key.as_str().split_once('.').unwrap();
            assert_eq!(id, op.as_str());
            assert_eq!(hash.len(), 16);
            assert!(hash.bytes().all(|c| c.is_ascii_hexdigit()));
        }
        // A fixed value (docs/api.md prints it): the derivation never changes, or a row's
        // key would no longer be what a person recomputes from its tenant and id.
        assert_eq!(a.as_str(), "9d9bb817477c6881.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8");
        assert_ne!(tenant_hash("org_482"), tenant_hash("org_48"));
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
