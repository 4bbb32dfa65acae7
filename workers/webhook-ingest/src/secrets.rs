//! The receiver's signing secrets (`WEBHOOK_SECRETS`): `whsec_` + the base64 of a key,
//! comma-separated, newest first, so a rotation is "prepend the new one, drop the old
//! one once the provider signs with the new one only". Parsed once at start; the keys
//! never print, and no error message repeats any part of them.

use std::fmt;

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use fleet_runtime::Secret;

/// Standard base64, padded or not (providers differ; the Standard Webhooks libraries
/// accept both): the secrets' keys and the signatures alike.
pub(crate) const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Secrets accepted at once: a rotation needs two; a few more leave room, no more.
pub const MAX_SECRETS: usize = 8;
/// Shortest key accepted (128 bits); Standard Webhooks generates 24 to 64 bytes.
pub const MIN_KEY_BYTES: usize = 16;
pub const MAX_KEY_BYTES: usize = 64;
pub const SECRET_PREFIX: &str = "whsec_";

/// The keys, newest first.
#[derive(Clone)]
pub struct WebhookSecrets {
    keys: Vec<Secret<Vec<u8>>>,
}

/// Why `WEBHOOK_SECRETS` was refused. `position` is 1-based in the list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretsError {
    #[error("WEBHOOK_SECRETS is empty: a receiver needs at least one whsec_ secret")]
    Empty,
    #[error("WEBHOOK_SECRETS holds more than {MAX_SECRETS} secrets")]
    TooMany,
    #[error("secret {position} of WEBHOOK_SECRETS does not start with whsec_")]
    MissingPrefix { position: usize },
    #[error("secret {position} of WEBHOOK_SECRETS is not base64 after whsec_")]
    NotBase64 { position: usize },
    #[error("secret {position} of WEBHOOK_SECRETS decodes to {len} bytes; {MIN_KEY_BYTES} to {MAX_KEY_BYTES} are accepted")]
    BadLength { position: usize, len: usize },
}

impl WebhookSecrets {
    /// Parses `whsec_…,whsec_…` (spaces around commas are ignored).
    pub fn parse(list: &str) -> Result<WebhookSecrets, SecretsError> {
        let entries: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if entries.is_empty() {
            return Err(SecretsError::Empty);
        }
        if entries.len() > MAX_SECRETS {
            return Err(SecretsError::TooMany);
        }
        let keys = entries
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                let position = i + 1;
                let encoded = entry
                    .strip_prefix(SECRET_PREFIX)
                    .ok_or(SecretsError::MissingPrefix { position })?;
                let key = BASE64
                    .decode(encoded)
                    .map_err(|_| SecretsError::NotBase64 { position })?;
                if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&key.len()) {
                    return Err(SecretsError::BadLength {
                        position,
                        len: key.len(),
                    });
                }
                Ok(Secret::new(key))
            })
            .collect::<Result<_, _>>()?;
        Ok(WebhookSecrets { keys })
    }

    /// The raw keys, newest first: for the HMAC only.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.keys.iter().map(|k| k.expose().as_slice())
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebhookSecrets([redacted; {}])", self.keys.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const B: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

    #[test]
    fn parses_a_rotation_list_newest_first() {
        let secrets = WebhookSecrets::parse(&format!("{A}, {B}")).unwrap();
        assert_eq!(secrets.len(), 2);
        let first: Vec<u8> = secrets.keys().next().unwrap().to_vec();
        assert_eq!(
            first,
            BASE64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap()
        );
    }

    #[test]
    fn refuses_what_cannot_be_a_key_without_echoing_it() {
        assert_eq!(
            WebhookSecrets::parse(" , ").unwrap_err(),
            SecretsError::Empty
        );
        assert_eq!(
            WebhookSecrets::parse(&format!("{A},sk_live_abc")).unwrap_err(),
            SecretsError::MissingPrefix { position: 2 }
        );
        assert_eq!(
            WebhookSecrets::parse("whsec_not base64!").unwrap_err(),
            SecretsError::NotBase64 { position: 1 }
        );
        assert_eq!(
            WebhookSecrets::parse("whsec_c2hvcnQ=").unwrap_err(),
            SecretsError::BadLength {
                position: 1,
                len: 5
            }
        );
        assert_eq!(
            WebhookSecrets::parse(&[A; 9].join(",")).unwrap_err(),
            SecretsError::TooMany
        );
        let message = WebhookSecrets::parse(&format!("{A},whsec_zz!zz"))
            .unwrap_err()
            .to_string();
        assert!(
            !message.contains("zz!zz") && !message.contains("MfKQ"),
            "{message}"
        );
    }

    #[test]
    fn debug_never_shows_a_key() {
        let shown = format!("{:?}", WebhookSecrets::parse(A).unwrap());
        assert_eq!(shown, "WebhookSecrets([redacted; 1])");
    }
}
