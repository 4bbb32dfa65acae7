//! Approvers' keys (Ed25519, or passkeys) and signatures as typed values: a registered public key, its
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

use crate::passkey::{Assertion, PasskeyKey};

/// The algorithm of keys `fleetctl` makes and registers.
pub const ALGORITHM: &str = "ed25519";
/// The algorithm of passkeys registered from the console (ECDSA P-256, SHA-256).
pub const PASSKEY_ALGORITHM: &str = "es256";

/// `ed25519:` or `passkey:` + 32 lower-case hex digits (128 bits of the SHA-256 of the
/// public key: the 32 Ed25519 bytes, or a passkey's uncompressed P-256 point).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(String);

impl KeyId {
    pub fn parse(s: &str) -> Option<KeyId> {
        let digits = s
            .strip_prefix("ed25519:")
            .or_else(|| s.strip_prefix("passkey:"))?;
        let ok = digits.len() == 32
            && digits
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| KeyId(s.to_owned()))
    }

    fn of(prefix: &str, public_bytes: &[u8]) -> KeyId {
        KeyId(format!(
            "{prefix}:{}",
            &hex::encode(Sha256::digest(public_bytes))[..32]
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it names a passkey (its signatures are WebAuthn assertions).
    pub fn is_passkey(&self) -> bool {
        self.0.starts_with("passkey:")
    }
}

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A registered approver's public key: an Ed25519 key (32 bytes, a valid point, as
/// `fleetctl key generate` makes) or a passkey registered from the console.
#[derive(Clone, PartialEq, Eq)]
pub enum PublicKey {
    Ed25519(VerifyingKey),
    Passkey(PasskeyKey),
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.key_id())
    }
}

impl PublicKey {
    /// An Ed25519 key from its 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<PublicKey> {
        let bytes: &[u8; 32] = bytes.try_into().ok()?;
        let key = VerifyingKey::from_bytes(bytes).ok()?;
        // A weak (small-order) key verifies signatures nobody made: never registered.
        (!key.is_weak()).then_some(PublicKey::Ed25519(key))
    }

    /// An Ed25519 key: unpadded base64url (as `fleetctl key generate` prints it), or
    /// standard base64.
    pub fn parse(text: &str) -> Option<PublicKey> {
        PublicKey::from_bytes(&decode_base64(text.trim())?)
    }

    /// A stored key of `algorithm`: `public_key` as stored, and for a passkey the relying
    /// party id and origin it was registered with.
    pub fn stored(
        algorithm: &str,
        public_key: &[u8],
        rp_id: Option<&str>,
        origin: Option<&str>,
    ) -> Option<PublicKey> {
        match algorithm {
            ALGORITHM => PublicKey::from_bytes(public_key),
            PASSKEY_ALGORITHM => {
                PasskeyKey::from_sec1(public_key, rp_id?, origin?).map(PublicKey::Passkey)
            }
            _ => None,
        }
    }

    pub fn algorithm(&self) -> &'static str {
        match self {
            PublicKey::Ed25519(_) => ALGORITHM,
            PublicKey::Passkey(_) => PASSKEY_ALGORITHM,
        }
    }

    /// The bytes stored for the key (`approver_keys.public_key`).
    pub fn to_stored_bytes(&self) -> Vec<u8> {
        match self {
            PublicKey::Ed25519(k) => k.as_bytes().to_vec(),
            PublicKey::Passkey(k) => k.to_sec1(),
        }
    }

    /// The Ed25519 key as text (unpadded base64url); a passkey has no text form.
    pub fn to_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.to_stored_bytes())
    }

    pub fn key_id(&self) -> KeyId {
        match self {
            PublicKey::Ed25519(k) => KeyId::of("ed25519", k.as_bytes()),
            PublicKey::Passkey(k) => KeyId::of("passkey", &k.to_sec1()),
        }
    }

    /// Whether `signature` is this key's over exactly `message`: strict Ed25519
    /// verification (no malleable or small-order signatures), or a passkey's assertion
    /// whose challenge is the message's hash ([`crate::passkey`]).
    pub fn verifies(&self, message: &[u8], signature: &Signature) -> bool {
        match self {
            PublicKey::Ed25519(k) => ed25519_dalek::Signature::from_slice(&signature.0)
                .is_ok_and(|sig| k.verify_strict(message, &sig).is_ok()),
            PublicKey::Passkey(k) => {
                Assertion::from_bytes(&signature.0).is_some_and(|a| k.verifies(message, &a).is_ok())
            }
        }
    }
}

/// A signature as presented and stored: 64 Ed25519 bytes, or a passkey's assertion in
/// its stored form ([`Assertion::to_bytes`]). What the bytes mean is the key's to say.
#[derive(Clone, PartialEq, Eq)]
pub struct Signature(Vec<u8>);

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signature(…)")
    }
}

impl Signature {
    /// 64 bytes (Ed25519) or a stored assertion; anything else is refused.
    pub fn from_bytes(bytes: &[u8]) -> Option<Signature> {
        (bytes.len() == 64 || Assertion::from_bytes(bytes).is_some())
            .then(|| Signature(bytes.to_vec()))
    }

    /// A passkey's assertion.
    pub fn of_assertion(assertion: &Assertion) -> Signature {
        Signature(assertion.to_bytes())
    }

    /// Unpadded base64url, as the API takes it.
    pub fn parse(text: &str) -> Option<Signature> {
        Signature::from_bytes(&URL_SAFE_NO_PAD.decode(text).ok()?)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.clone()
    }

    pub fn to_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.0)
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
        PublicKey::Ed25519(self.0.verifying_key())
    }

    pub fn sign(&self, message: &[u8]) -> Signature {
        Signature(self.0.sign(message).to_bytes().to_vec())
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
        // Bytes that are no Ed25519 signature never verify (nor panic).
        assert!(!alice
            .public_key()
            .verifies(b"statement", &Signature(vec![1, 2, 3])));
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
            PublicKey::parse(&STANDARD.encode(public.to_stored_bytes())),
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
