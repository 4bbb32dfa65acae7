//! A key's registration, signed by whoever vouched for it: the statement an administrator
//! signs with their own registered Ed25519 key when they register someone's key, so that
//! "who registered this key, when, for whom" is a signature anyone can check offline, not
//! only a row the database kept.
//!
//! ```json
//! {"algorithm":"ed25519","key_id":"ed25519:…","origin":null,"principal":"alice",
//!  "public_key":"…","registered_at":"2026-12-06T10:00:00.000000Z","registered_by":"ops-dana",
//!  "registrar":{"key_id":"ed25519:…","kind":"admin","principal":"dana"},"role":"approver",
//!  "rp_id":null,"statement":"fleet.key-registration.v1","tenants":["org_1"]}
//! ```
//!
//! The chain ends at the deployment: the first administrator keys are registered with the
//! deployment's evidence key (`registrar.kind = "evidence_key"`, its public key in the
//! statement), the key evidence bundles are signed with, so a verifier that trusts the
//! bundle's signer can follow every key back to it. Only an administrator's Ed25519 key
//! may be registered that way, and only an administrator's registered Ed25519 key may
//! register others. Pure: the clock is an input.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::hash::canonical_json;
use crate::signing::{ApproverKey, KeyId, PublicKey, Signature};

/// The statement's version: a verifier that meets another refuses it.
pub const REGISTRATION_STATEMENT: &str = "fleet.key-registration.v1";

/// Who vouches for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registrar {
    /// An administrator, with their own registered Ed25519 key.
    Admin { principal: String, key_id: KeyId },
    /// The deployment's evidence key: the root, for administrators' keys only.
    EvidenceKey { key: PublicKey },
}

impl Registrar {
    pub fn key_id(&self) -> KeyId {
        match self {
            Registrar::Admin { key_id, .. } => key_id.clone(),
            Registrar::EvidenceKey { key } => key.key_id(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Registrar::Admin { principal, key_id } => {
                json!({"kind": "admin", "principal": principal, "key_id": key_id.as_str()})
            }
            Registrar::EvidenceKey { key } => json!({
                "kind": "evidence_key", "key_id": key.key_id().as_str(), "public_key": key.to_text(),
            }),
        }
    }

    fn from_json(v: &Value) -> Option<Registrar> {
        let key_id = KeyId::parse(v.get("key_id")?.as_str()?)?;
        match v.get("kind")?.as_str()? {
            "admin" => Some(Registrar::Admin {
                principal: v.get("principal")?.as_str()?.to_owned(),
                key_id,
            }),
            "evidence_key" => {
                let key = PublicKey::parse(v.get("public_key")?.as_str()?)?;
                (key.key_id() == key_id).then_some(Registrar::EvidenceKey { key })
            }
            _ => None,
        }
    }
}

/// The private key a registration is signed with, and whose it is.
#[derive(Clone, Copy)]
pub enum RegistrarKey<'a> {
    /// An administrator's registered Ed25519 key (`fleetctl key add --signing-key`).
    Admin(&'a ApproverKey),
    /// The deployment's evidence key, for the first administrators' keys.
    EvidenceKey(&'a ApproverKey),
}

impl RegistrarKey<'_> {
    pub fn key(&self) -> &ApproverKey {
        match self {
            RegistrarKey::Admin(k) | RegistrarKey::EvidenceKey(k) => k,
        }
    }
}

/// What a registrar signs when a key is registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRegistration {
    /// Whose key it is, their role and tenants when it was registered.
    pub principal: String,
    pub role: String,
    pub tenants: Vec<String>,
    pub key: PublicKey,
    pub registered_at: DateTime<Utc>,
    /// The administrator as they named themselves (`--by`), kept as before.
    pub registered_by: String,
    pub registrar: Registrar,
}

/// Times as the database writes them (`fleet_utc`): microseconds, `Z`.
pub fn format_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// A time written exactly as [`format_time`] writes it.
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let at = DateTime::parse_from_rfc3339(text).ok()?.with_timezone(&Utc);
    (format_time(at) == text).then_some(at)
}

impl KeyRegistration {
    pub fn to_json(&self) -> Value {
        let (rp_id, origin) = match &self.key {
            PublicKey::Passkey(p) => (Some(p.rp_id.clone()), Some(p.origin.clone())),
            PublicKey::Ed25519(_) => (None, None),
        };
        json!({
            "statement": REGISTRATION_STATEMENT,
            "principal": self.principal,
            "role": self.role,
            "tenants": self.tenants,
            "key_id": self.key.key_id().as_str(),
            "algorithm": self.key.algorithm(),
            "public_key": self.key.to_text(),
            "rp_id": rp_id,
            "origin": origin,
            "registered_at": format_time(self.registered_at),
            "registered_by": self.registered_by,
            "registrar": self.registrar.to_json(),
        })
    }

    /// The bytes signed: RFC 8785 canonical JSON, UTF-8.
    pub fn to_bytes(&self) -> Vec<u8> {
        canonical_json(&self.to_json()).into_bytes()
    }

    /// A statement read back; `None` when it is not one this build writes (another
    /// version, a member missing or changed in form).
    pub fn from_json(v: &Value) -> Option<KeyRegistration> {
        if v.get("statement")?.as_str()? != REGISTRATION_STATEMENT {
            return None;
        }
        let text = |name: &str| v.get(name).and_then(Value::as_str);
        let bytes = base64::Engine::decode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            text("public_key")?,
        )
        .ok()?;
        let key = PublicKey::stored(text("algorithm")?, &bytes, text("rp_id"), text("origin"))?;
        let parsed = KeyRegistration {
            principal: text("principal")?.to_owned(),
            role: text("role")?.to_owned(),
            tenants: v
                .get("tenants")?
                .as_array()?
                .iter()
                .map(|t| t.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
            registered_at: parse_time(text("registered_at")?)?,
            registered_by: text("registered_by")?.to_owned(),
            registrar: Registrar::from_json(v.get("registrar")?)?,
            key,
        };
        // Read back exactly: a member added, or a time written another way, is not this
        // statement.
        (parsed.to_json() == *v && text("key_id") == Some(parsed.key.key_id().as_str()))
            .then_some(parsed)
    }

    /// The registration signed by `registrar_key`, which must be the registrar's key.
    pub fn sign(&self, registrar_key: &ApproverKey) -> Result<Signature, String> {
        if registrar_key.public_key().key_id() != self.registrar.key_id() {
            return Err(format!(
                "the signing key is {}, not the registrar's {}",
                registrar_key.public_key().key_id(),
                self.registrar.key_id()
            ));
        }
        Ok(registrar_key.sign(&self.to_bytes()))
    }

    /// Whether the rules of the chain hold for this statement alone: the root registers
    /// administrators' Ed25519 keys only, and only approvers and administrators have keys.
    pub fn shape_problem(&self) -> Option<&'static str> {
        if !matches!(self.role.as_str(), "approver" | "admin") {
            return Some("only approvers and administrators have registered keys");
        }
        if self.role == "admin" && !matches!(self.key, PublicKey::Ed25519(_)) {
            return Some("an administrator's key is an Ed25519 key");
        }
        if matches!(self.registrar, Registrar::EvidenceKey { .. }) && self.role != "admin" {
            return Some("the deployment's evidence key registers administrators' keys only");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration(registrar: Registrar) -> KeyRegistration {
        KeyRegistration {
            principal: "alice".into(),
            role: "approver".into(),
            tenants: vec!["org_1".into()],
            key: ApproverKey::from_seed([1; 32]).public_key(),
            registered_at: parse_time("2026-12-06T10:00:00.123456Z").unwrap(),
            registered_by: "dana".into(),
            registrar,
        }
    }

    #[test]
    fn a_registration_reads_back_and_is_signed_only_by_its_registrar() {
        let admin = ApproverKey::from_seed([2; 32]);
        let r = registration(Registrar::Admin {
            principal: "dana".into(),
            key_id: admin.public_key().key_id(),
        });
        assert_eq!(KeyRegistration::from_json(&r.to_json()), Some(r.clone()));
        let signature = r.sign(&admin).unwrap();
        assert!(admin.public_key().verifies(&r.to_bytes(), &signature));
        assert!(r.sign(&ApproverKey::from_seed([3; 32])).is_err());
        assert_eq!(r.shape_problem(), None);
        let mut changed = r.to_json();
        changed["extra"] = json!(1);
        assert_eq!(KeyRegistration::from_json(&changed), None);
    }

    #[test]
    fn the_root_registers_administrators_only() {
        let root = ApproverKey::from_seed([9; 32]).public_key();
        let mut r = registration(Registrar::EvidenceKey { key: root });
        assert!(r.shape_problem().is_some());
        r.role = "admin".into();
        assert_eq!(r.shape_problem(), None);
        assert_eq!(KeyRegistration::from_json(&r.to_json()), Some(r));
    }
}
