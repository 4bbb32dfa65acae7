//! A signed-in person's console session: a random secret held only in their browser's
//! cookie. The server stores the secret's SHA-256 (as with API tokens, a database dump
//! yields no usable session) and derives from the secret the token every console form
//! must carry, so a page of another site can post nothing in the person's name. Pure: the
//! random bytes are an input.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Every session secret starts with this, so a leaked one is recognisable as ours.
pub const SESSION_PREFIX: &str = "fcs_";
/// Random bytes in a session secret: 256 bits, far beyond guessing.
pub const SESSION_SECRET_BYTES: usize = 32;
const SESSION_LEN: usize = SESSION_PREFIX.len() + 2 * SESSION_SECRET_BYTES;
/// Bound into the form token so it is never the hash of anything else we store.
const CSRF_CONTEXT: &[u8] = b"fleet console form token\n";

/// The session secret in clear: the cookie's value, never stored or logged.
pub struct SessionSecret(String);

/// `sha256:` + hex of the secret: what the sessions table keys on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHash(String);

impl SessionSecret {
    pub fn from_secret_bytes(bytes: &[u8; SESSION_SECRET_BYTES]) -> SessionSecret {
        SessionSecret(format!("{SESSION_PREFIX}{}", hex::encode(bytes)))
    }

    /// A cookie value that can be one of ours, or `None` (refused without a lookup).
    pub fn of_presented(value: &str) -> Option<SessionSecret> {
        let secret = value.strip_prefix(SESSION_PREFIX)?;
        let well_formed = value.len() == SESSION_LEN
            && secret
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        well_formed.then(|| SessionSecret(value.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> SessionHash {
        SessionHash(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(self.0.as_bytes()))
        ))
    }

    /// The token every form of this session carries (hex of SHA-256 over a context and
    /// the secret): known to the page, unknown to any other site, useless without the
    /// cookie, and it reveals nothing of the secret.
    pub fn form_token(&self) -> String {
        let mut h = Sha256::new();
        h.update(CSRF_CONTEXT);
        h.update(self.0.as_bytes());
        hex::encode(h.finalize())
    }

    /// Whether a posted form token is this session's, compared in constant time.
    pub fn form_token_matches(&self, presented: &str) -> bool {
        let expected = self.form_token();
        expected.len() == presented.len()
            && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
    }
}

impl fmt::Debug for SessionSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionSecret([redacted])")
    }
}

impl SessionHash {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_prefixed_hex_and_only_such_values_are_looked_up() {
        let s = SessionSecret::from_secret_bytes(&[0xab; SESSION_SECRET_BYTES]);
        assert!(s.expose().starts_with("fcs_abab") && s.expose().len() == 68);
        let again = SessionSecret::of_presented(s.expose()).unwrap();
        assert_eq!(again.hash(), s.hash());
        assert!(s.hash().as_str().starts_with("sha256:") && s.hash().as_str().len() == 71);
        for bad in [
            "",
            "fcs_",
            &s.expose()[1..],
            &s.expose().to_uppercase(),
            &format!("{}0", s.expose()),
            &format!("fcs_{}", "g".repeat(64)),
        ] {
            assert!(SessionSecret::of_presented(bad).is_none(), "{bad:?}");
        }
        assert_eq!(format!("{s:?}"), "SessionSecret([redacted])");
    }

    #[test]
    fn the_form_token_belongs_to_its_session_only() {
        let a = SessionSecret::from_secret_bytes(&[1; SESSION_SECRET_BYTES]);
        let b = SessionSecret::from_secret_bytes(&[2; SESSION_SECRET_BYTES]);
        assert!(a.form_token_matches(&a.form_token()));
        assert!(!a.form_token_matches(&b.form_token()));
        assert!(!a.form_token_matches(""));
        assert!(!a.form_token_matches(&a.form_token()[1..]));
        assert_ne!(
            a.form_token(),
            a.hash().as_str().trim_start_matches("sha256:")
        );
        assert!(!a.form_token().contains(&a.expose()[4..]));
    }
}
