//! Approvals signed with a passkey in the console (WebAuthn), verified without trusting
//! whoever relays them: the API that recorded the approval, or anything that wrote the row.
//!
//! A passkey signs an *assertion*: the authenticator's data (the hash of the relying
//! party's id, flags, a counter) followed by the SHA-256 of the client data, a JSON text
//! the browser writes with the challenge it was given, the page's origin and the
//! ceremony's type. The console makes the challenge the SHA-256 of the approval statement
//! (`approval_statement`), so the assertion is a signature over the statement: it names
//! the operation, its hash, the words shown and the expiry, like an Ed25519 signature
//! made with `fleetctl approve --key`.
//!
//! An assertion counts for a statement when (the WebAuthn assertion checks that do not
//! need the server's memory of a ceremony):
//! - the client data is a `webauthn.get` ceremony, its challenge is the base64url of the
//!   statement's SHA-256, and its origin is the origin the passkey was registered from;
//! - the authenticator data starts with the SHA-256 of the registered relying party id,
//!   and its flags say the user was present *and* verified (PIN, biometrics);
//! - the ECDSA P-256 signature (ES256, DER) verifies with the registered public key over
//!   the authenticator data followed by the SHA-256 of the client data.
//!
//! The signature counter is not checked: an approval is bound to one statement with an
//! expiry, so a cloned authenticator gains nothing a counter would stop, and synchronised
//! passkeys report 0.
//!
//! Stored as one byte string (the `signature` of an approval):
//! `u16 BE length ‖ authenticator data ‖ u16 BE length ‖ client data JSON ‖ DER signature`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature as EcdsaSignature, VerifyingKey};
use sha2::{Digest, Sha256};

/// The authenticator data's flags: user present, user verified.
const FLAG_UP: u8 = 0x01;
const FLAG_UV: u8 = 0x04;

/// The longest stored assertion accepted: client data is a few hundred bytes, the
/// authenticator data of an assertion 37 plus extensions.
pub const MAX_ASSERTION_BYTES: usize = 4096;

/// A passkey's public key as registered: ES256 (P-256), and where it was registered.
#[derive(Clone, PartialEq, Eq)]
pub struct PasskeyKey {
    key: VerifyingKey,
    /// The relying party id (the console's host name) the passkey is scoped to.
    pub rp_id: String,
    /// The console's origin (`https://fleet.example.com`) the ceremony ran in.
    pub origin: String,
}

impl std::fmt::Debug for PasskeyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PasskeyKey({}, {})", self.rp_id, self.origin)
    }
}

impl PasskeyKey {
    /// From the uncompressed SEC1 point (65 bytes, `04 ‖ x ‖ y`) and its scope.
    pub fn from_sec1(point: &[u8], rp_id: &str, origin: &str) -> Option<PasskeyKey> {
        if point.len() != 65 || rp_id.is_empty() || origin.is_empty() {
            return None;
        }
        Some(PasskeyKey {
            key: VerifyingKey::from_sec1_bytes(point).ok()?,
            rp_id: rp_id.to_owned(),
            origin: origin.to_owned(),
        })
    }

    /// From the COSE key's coordinates (32 bytes each), as a registration ceremony gives.
    pub fn from_coordinates(x: &[u8], y: &[u8], rp_id: &str, origin: &str) -> Option<PasskeyKey> {
        if x.len() != 32 || y.len() != 32 {
            return None;
        }
        let mut point = Vec::with_capacity(65);
        point.push(0x04);
        point.extend_from_slice(x);
        point.extend_from_slice(y);
        PasskeyKey::from_sec1(&point, rp_id, origin)
    }

    /// The uncompressed SEC1 point, as stored.
    pub fn to_sec1(&self) -> Vec<u8> {
        self.key.to_sec1_point(false).as_bytes().to_vec()
    }

    /// Whether `assertion` is this passkey's over exactly `message` (see the module's rule).
    pub fn verifies(&self, message: &[u8], assertion: &Assertion) -> Result<(), AssertionFault> {
        let client: serde_json::Value = serde_json::from_slice(&assertion.client_data_json)
            .map_err(|_| AssertionFault::ClientData)?;
        if client.get("type").and_then(|t| t.as_str()) != Some("webauthn.get") {
            return Err(AssertionFault::CeremonyType);
        }
        let expected = challenge_for(message);
        if client.get("challenge").and_then(|c| c.as_str()) != Some(expected.as_str()) {
            return Err(AssertionFault::Challenge);
        }
        if client.get("origin").and_then(|o| o.as_str()) != Some(self.origin.as_str()) {
            return Err(AssertionFault::Origin);
        }
        let data = &assertion.authenticator_data;
        if data.len() < 37 {
            return Err(AssertionFault::AuthenticatorData);
        }
        if data[..32] != Sha256::digest(self.rp_id.as_bytes())[..] {
            return Err(AssertionFault::RelyingParty);
        }
        if data[32] & (FLAG_UP | FLAG_UV) != FLAG_UP | FLAG_UV {
            return Err(AssertionFault::UserNotVerified);
        }
        let signature = EcdsaSignature::from_der(&assertion.signature)
            .map_err(|_| AssertionFault::Signature)?;
        // Authenticators may give either of the two equivalent values of s.
        let signature = signature.normalize_s();
        let mut signed = data.clone();
        signed.extend_from_slice(&Sha256::digest(&assertion.client_data_json));
        self.key
            .verify(&signed, &signature)
            .map_err(|_| AssertionFault::Signature)
    }
}

/// The WebAuthn challenge for `message`: the base64url (unpadded) of its SHA-256, as the
/// browser writes it in the client data.
pub fn challenge_for(message: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(message))
}

/// What a passkey returned from `navigator.credentials.get`.
#[derive(Clone, PartialEq, Eq)]
pub struct Assertion {
    pub authenticator_data: Vec<u8>,
    pub client_data_json: Vec<u8>,
    /// ES256, ASN.1 DER.
    pub signature: Vec<u8>,
}

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Assertion(…)")
    }
}

impl Assertion {
    /// The stored form (see the module's documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            4 + self.authenticator_data.len() + self.client_data_json.len() + self.signature.len(),
        );
        for part in [&self.authenticator_data, &self.client_data_json] {
            out.extend_from_slice(&(part.len() as u16).to_be_bytes());
            out.extend_from_slice(part);
        }
        out.extend_from_slice(&self.signature);
        out
    }

    /// Reads the stored form; `None` for anything else.
    pub fn from_bytes(bytes: &[u8]) -> Option<Assertion> {
        if bytes.len() > MAX_ASSERTION_BYTES {
            return None;
        }
        let (authenticator_data, rest) = length_prefixed(bytes)?;
        let (client_data_json, signature) = length_prefixed(rest)?;
        let plausible =
            authenticator_data.len() >= 37 && !client_data_json.is_empty() && !signature.is_empty();
        plausible.then(|| Assertion {
            authenticator_data: authenticator_data.to_vec(),
            client_data_json: client_data_json.to_vec(),
            signature: signature.to_vec(),
        })
    }

    /// From the three values the browser gives, each base64url (padding tolerated).
    pub fn from_parts(
        authenticator_data: &str,
        client_data_json: &str,
        signature: &str,
    ) -> Option<Assertion> {
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok();
        let assertion = Assertion {
            authenticator_data: decode(authenticator_data)?,
            client_data_json: decode(client_data_json)?,
            signature: decode(signature)?,
        };
        let fits = assertion.authenticator_data.len() <= u16::MAX as usize
            && assertion.client_data_json.len() <= u16::MAX as usize;
        fits.then(|| Assertion::from_bytes(&assertion.to_bytes()))?
    }
}

fn length_prefixed(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u16::from_be_bytes(bytes.get(..2)?.try_into().ok()?) as usize;
    let part = bytes.get(2..2 + len)?;
    Some((part, &bytes[2 + len..]))
}

/// Why an assertion does not count (logged and kept as evidence; every one is a refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssertionFault {
    ClientData,
    CeremonyType,
    Challenge,
    Origin,
    AuthenticatorData,
    RelyingParty,
    UserNotVerified,
    Signature,
}

#[cfg(test)]
mod tests;
