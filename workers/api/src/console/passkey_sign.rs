//! Signing a statement other than one operation's approval with a passkey in the console
//! (a standing mandate, a batch of approvals): what the page gives the browser to ask the
//! authenticator for (the statement's hash as the challenge, the person's credentials),
//! and the assertion the form posts back, as a key id and a signature in the form the
//! JSON routes take. The JSON routes then verify it with the registered key
//! (`fleet_core::passkey`), exactly as they verify an Ed25519 signature.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use fleet_core::passkey::{challenge_for, Assertion};
use fleet_core::Signature;
use serde::Deserialize;

use super::setup::Console;
use crate::error::ApiError;
use crate::state::AppState;

/// What the browser needs to have `message` signed by one of the person's passkeys.
pub struct PasskeyAsk {
    /// The SHA-256 of the message, base64url: the WebAuthn challenge.
    pub challenge: String,
    pub rp_id: String,
    /// The person's passkeys' credential ids, a JSON array of base64url strings.
    pub credentials: String,
}

impl PasskeyAsk {
    /// For `principal` to sign `message`; `None` when the console cannot use passkeys or
    /// the person has no registered one.
    pub async fn of(
        state: &AppState,
        console: &Console,
        principal: &str,
        message: &[u8],
    ) -> Result<Option<PasskeyAsk>, ApiError> {
        let Some(site) = console.passkeys.as_ref() else {
            return Ok(None);
        };
        let credentials: Vec<String> = state
            .store
            .active_passkeys(principal)
            .await?
            .iter()
            .map(|p| URL_SAFE_NO_PAD.encode(&p.credential_id))
            .collect();
        if credentials.is_empty() {
            return Ok(None);
        }
        Ok(Some(PasskeyAsk {
            challenge: challenge_for(message),
            rp_id: site.rp_id.clone(),
            credentials: serde_json::to_string(&credentials).unwrap_or_else(|_| "[]".to_owned()),
        }))
    }
}

/// What `passkey.js` fills in from the authenticator's answer (each base64url).
#[derive(Debug, Default, Deserialize)]
pub struct PasskeyAnswer {
    pub credential_id: Option<String>,
    pub authenticator_data: Option<String>,
    pub client_data_json: Option<String>,
    pub signature: Option<String>,
}

impl PasskeyAnswer {
    /// The key id the credential names among `principal`'s passkeys and the assertion as
    /// a signature's text; an empty string for what is missing or malformed, for the
    /// route's signature check to refuse by name.
    pub async fn as_signature(
        &self,
        state: &AppState,
        principal: &str,
    ) -> Result<(String, String), ApiError> {
        let credential = self
            .credential_id
            .as_deref()
            .and_then(|c| URL_SAFE_NO_PAD.decode(c).ok());
        let key_id = match credential {
            Some(credential) => state
                .store
                .active_passkeys(principal)
                .await?
                .into_iter()
                .find(|p| p.credential_id == credential)
                .map(|p| p.key_id),
            None => None,
        };
        let signature = match (
            &self.authenticator_data,
            &self.client_data_json,
            &self.signature,
        ) {
            (Some(a), Some(c), Some(s)) => {
                Assertion::from_parts(a, c, s).map(|a| Signature::of_assertion(&a).to_text())
            }
            _ => None,
        };
        Ok((key_id.unwrap_or_default(), signature.unwrap_or_default()))
    }
}
