//! Approvers' Ed25519 keys and signatures as typed values: a registered public key, its
//! id, a signature, and the signing key an approver keeps on their own machine. Parsed
//! once at the edge (the API's body, a key file, a database row); trusted afterwards.
//!
//! Text forms: keys and signatures are unpadded base64url; a key id is `ed25519:` + the
//! first 32 hex digits of the SHA-256 of the public key, so a signer knows its key id from
//! its key alone and one public key is one id wherever it is registered.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The only algorithm approvals are signed with.
pub const ALGORITHM: &str = "ed25519";

/// `ed25519:` + 32 lower-case hex digits (128 bits of the public key's SHA-256).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(String);

impl KeyId {
    pub fn parse(s: &str) -> Option<KeyId> {
        let digits = s.strip_prefix("ed25519:")?;
        let ok = digits.len() == 32
            && digits
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| KeyId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A registered approver's public key (32 bytes, a valid Ed25519 point).
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.key_id())
    }
}

impl PublicKey {
    pub fn from_bytes(bytes: &[u8]) -> Option<PublicKey> {
        let bytes: &[u8; 32] = bytes.try_into().ok()?;
        let key = VerifyingKey::from_bytes(bytes).ok()?;
        // A weak (small-order) key verifies signatures nobody made: never registered.
        (!key.is_weak()).then_some(PublicKey(key))
    }

    /// Unpadded base64url (as `fleetctl key generate` prints it), or standard base64.
    pub fn parse(text: &str) -> Option<PublicKey> {
        PublicKey::from_bytes(&decode_base64(text.trim())?)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    pub fn to_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.as_bytes())
    }

    pub fn key_id(&self) -> KeyId {
        KeyId(format!(
            "ed25519:{}",
            &hex::encode(Sha256::digest(self.as_bytes()))[..32]
        ))
    }

    /// Whether `signature` is this key's over exactly `message` (strict verification:
    /// no malleable or small-order signatures).
    pub fn verifies(&self, message: &[u8], signature: &Signature) -> bool {
        self.0.verify_strict(message, &signature.0).is_ok()
    }
}

/// An Ed25519 signature (64 bytes).
#[derive(Clone, PartialEq, Eq)]
pub struct Signature(ed25519_dalek::Signature);

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signature(…)")
    }
}

impl Signature {
    pub fn from_bytes(bytes: &[u8]) -> Option<Signature> {
        let bytes: &[u8; 64] = bytes.try_into().ok()?;
        Some(Signature(ed25519_dalek::Signature::from_bytes(bytes)))
    }

    /// Unpadded base64url, as the API takes it.
    pub fn parse(text: &str) -> Option<Signature> {
        Signature::from_bytes(&URL_SAFE_NO_PAD.decode(text).ok()?)
    }

    pub fn to_bytes(&self) -> [u8; 64] {
        self.0.to_bytes()
    }

    pub fn to_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.to_bytes())
    }
}

/// An approver's private key: only ever on the approver's machine. Not `Debug` beyond
/// its key id, never printed.
pub struct ApproverKey(SigningKey);

impl std::fmt::Debug for ApproverKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApproverKey({})", self.public_key().key_id())
    }
}

impl ApproverKey {
    /// The key of these 32 secret bytes (from the operating system's random source when
    /// a key is generated: randomness is the caller's).
    pub fn from_seed(seed: [u8; 32]) -> ApproverKey {
        ApproverKey(SigningKey::from_bytes(&seed))
    }

    /// The key file's text: unpadded base64url of the 32 secret bytes, one line.
    pub fn parse(text: &str) -> Option<ApproverKey> {
        let bytes = URL_SAFE_NO_PAD.decode(text.trim()).ok()?;
        Some(ApproverKey::from_seed(bytes.try_into().ok()?))
    }

    pub fn to_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0.to_bytes())
    }

    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    pub fn sign(&self, message: &[u8]) -> Signature {
        Signature(self.0.sign(message))
    }
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .or_else(|| STANDARD.decode(text).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> ApproverKey {
        ApproverKey::from_seed([n; 32])
    }

    #[test]
    fn a_signature_verifies_with_its_key_over_its_message_only() {
        let (alice, bob) = (key(1), key(2));
        let sig = alice.sign(b"statement");
        assert!(alice.public_key().verifies(b"statement", &sig));
        assert!(!alice.public_key().verifies(b"statement!", &sig));
        assert!(!bob.public_key().verifies(b"statement", &sig));
        let mut bytes = sig.to_bytes();
        bytes[10] ^= 1;
        assert!(!alice
            .public_key()
            .verifies(b"statement", &Signature::from_bytes(&bytes).unwrap()));
    }

    #[test]
    fn text_forms_round_trip() {
        let k = key(7);
        assert_eq!(
            ApproverKey::parse(&k.to_text()).unwrap().public_key(),
            k.public_key()
        );
        let public = k.public_key();
        assert_eq!(PublicKey::parse(&public.to_text()), Some(public.clone()));
        assert_eq!(
            PublicKey::parse(&STANDARD.encode(public.as_bytes())),
            Some(public.clone())
        );
        let sig = k.sign(b"m");
        assert_eq!(Signature::parse(&sig.to_text()), Some(sig));
        let id = public.key_id();
        assert_eq!(KeyId::parse(id.as_str()), Some(id.clone()));
        assert!(id.as_str().starts_with("ed25519:") && id.as_str().len() == 8 + 32);
    }

    #[test]
    fn malformed_values_are_refused() {
        assert_eq!(PublicKey::parse("AAAA"), None);
        // The identity point is a small-order key.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(PublicKey::from_bytes(&identity), None);
        assert_eq!(Signature::parse("not base64!"), None);
        assert_eq!(Signature::from_bytes(&[0u8; 63]), None);
        assert_eq!(KeyId::parse("ed25519:ABC"), None);
        assert_eq!(KeyId::parse("rsa:0123456789abcdef0123456789abcdef"), None);
        assert!(ApproverKey::parse("short").is_none());
    }
}
