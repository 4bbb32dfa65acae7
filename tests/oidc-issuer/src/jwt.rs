//! The issuer's RSA key: its JWK, and RS256 compact JWS signatures (RFC 7515) over ID
//! token claims; and HS256 ones keyed with a shared secret, for the tests that a client
//! refuses them.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rsa::pkcs1v15;
use rsa::signature::{SignatureEncoding, Signer};
use rsa::traits::PublicKeyParts;
use rsa::RsaPrivateKey;
use serde_json::{json, Value};
use sha2::Sha256;

pub struct SigningKey {
    key: pkcs1v15::SigningKey<Sha256>,
    jwk: Value,
    kid: String,
}

impl SigningKey {
    /// A new 2048-bit key with a random key id.
    pub fn generate() -> anyhow::Result<SigningKey> {
        let private = RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)?;
        let kid = format!("test-{}", &crate::random_token()[..12]);
        let jwk = json!({
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": kid,
            "n": URL_SAFE_NO_PAD.encode(private.n().to_bytes_be()),
            "e": URL_SAFE_NO_PAD.encode(private.e().to_bytes_be()),
        });
        Ok(SigningKey {
            key: pkcs1v15::SigningKey::<Sha256>::new(private),
            jwk,
            kid,
        })
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// `header.claims.signature`, base64url each, signed RS256.
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": self.kid});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.key.sign(input.as_bytes()).to_bytes();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// `header.claims.signature`, base64url each, signed HS256 (RFC 7518, section 3.2) with
/// `secret`'s bytes as the key, as a client secret is used when a client accepts HS256.
pub fn sign_hs256(secret: &str, claims: &Value) -> String {
    let header = json!({"alg": "HS256", "typ": "JWT"});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(input.as_bytes());
    format!(
        "{input}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}
