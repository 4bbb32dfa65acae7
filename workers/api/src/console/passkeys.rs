//! Passkeys in the console: an approver creates one here (a WebAuthn registration,
//! verified with `webauthn-rs`), an administrator accepts it (`fleetctl key accept`), and
//! from then on the approver signs approvals with it on the operation's page.
//!
//! | route | what |
//! |---|---|
//! | `GET /console/passkeys` | my passkeys: accepted, waiting for an administrator |
//! | `POST /console/passkeys/start` | a registration's options for `navigator.credentials.create` |
//! | `POST /console/passkeys/finish` | the browser's answer: verified, kept as a request |
//!
//! The two POSTs are JSON, called by `/console/assets/passkey.js`, and carry the
//! session's form token in the `x-fleet-form-token` header (else 403, nothing written).
//!
//! Only ES256 (P-256) passkeys are asked for and kept: the assertion verifier every
//! component shares (`fleet_core::passkey`) knows that one algorithm, which every
//! platform authenticator and security key offers.

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use fleet_core::approval_statement::{expiry_for, format_expiry};
use fleet_core::passkey::PasskeyKey;
use fleet_core::visible::reveal;
use fleet_core::{ApprovalStatement, PublicKey};
use fleet_store::{OperationRow, PasskeyRequest, VerifiedPasskey};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use webauthn_rs::prelude::{
    COSEAlgorithm, COSEKeyType, ECDSACurve, PasskeyRegistration, RegisterPublicKeyCredential, Uuid,
};

use super::handler::html;
use super::passkey_sign::PasskeyAsk;
use super::passkey_site::PasskeySite;
use super::present::Me;
use super::session::Signed;
use super::setup::Console;
use crate::error::ApiError;
use crate::state::AppState;

/// The header the console's script sends the session's form token in.
pub const FORM_TOKEN_HEADER: &str = "x-fleet-form-token";

/// The WebAuthn user handle of `principal`: stable, and not their name (an authenticator
/// may show or sync it).
fn principal_uuid(principal: &str) -> Uuid {
    let digest = Sha256::digest(principal.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Uuid::from_bytes(bytes)
}

#[derive(Template)]
#[template(path = "console/passkeys.html")]
struct PasskeysPage {
    me: Me,
    available: bool,
    rp_id: String,
    items: Vec<PasskeyLine>,
}

struct PasskeyLine {
    key_id: String,
    created: String,
    state: &'static str,
}

impl PasskeyLine {
    fn of(r: &PasskeyRequest) -> PasskeyLine {
        PasskeyLine {
            key_id: r.key_id.clone(),
            created: r.finished_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            state: match (r.accepted_at, r.removed_at) {
                (_, Some(_)) => "removed",
                (Some(_), None) => "registered: your signatures count",
                (None, None) => "waiting for an administrator",
            },
        }
    }
}

pub async fn page(
    State(state): State<AppState>,
    State(console): State<Arc<Console>>,
    signed: Signed,
) -> Result<Response, ApiError> {
    let site = console.passkeys.as_ref();
    let items = state
        .store
        .passkey_requests(Some(&signed.principal.name))
        .await?;
    Ok(html(
        PasskeysPage {
            me: signed.me(),
            available: site.is_some(),
            rp_id: site.map(|s| s.rp_id.clone()).unwrap_or_default(),
            items: items.iter().map(PasskeyLine::of).collect(),
        }
        .render(),
    ))
}

/// A JSON refusal the script shows as it is.
fn refused(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// The checks both POSTs make: the console offers passkeys, the form token matches, and
/// the person is an approver (only approvers have keys).
fn admitted<'a>(
    console: &'a Console,
    signed: &Signed,
    headers: &HeaderMap,
) -> Result<&'a PasskeySite, (StatusCode, &'static str)> {
    let Some(site) = console.passkeys.as_ref() else {
        return Err((
            StatusCode::NOT_FOUND,
            "passkeys need the console to be served from a domain name over https",
        ));
    };
    let token_ok = headers
        .get(FORM_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| signed.secret.form_token_matches(t));
    if !token_ok {
        return Err((StatusCode::FORBIDDEN, "this page is stale: reload it"));
    }
    if signed.principal.role != fleet_core::Role::Approver {
        return Err((
            StatusCode::FORBIDDEN,
            "only approvers sign approvals, so only approvers have passkeys",
        ));
    }
    Ok(site)
}

pub async fn start(
    State(state): State<AppState>,
    State(console): State<Arc<Console>>,
    signed: Signed,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let site = match admitted(&console, &signed, &headers) {
        Ok(site) => site,
        Err((status, message)) => return Ok(refused(status, message)),
    };
    let name = &signed.principal.name;
    let exclude: Vec<_> = state
        .store
        .active_passkeys(name)
        .await?
        .into_iter()
        .map(|p| p.credential_id)
        .collect();
    let Ok((mut options, ceremony)) =
        site.webauthn
            .start_passkey_registration(principal_uuid(name), name, name, Some(exclude))
    else {
        return Ok(refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "could not start a registration",
        ));
    };
    options
        .public_key
        .pub_key_cred_params
        .retain(|p| p.alg == COSEAlgorithm::ES256 as i64);
    let request_id = ulid::Ulid::new().to_string();
    let Ok(ceremony) = serde_json::to_value(&ceremony) else {
        return Ok(refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "could not keep the registration",
        ));
    };
    state
        .store
        .start_passkey_request(&request_id, name, &ceremony)
        .await?;
    Ok(Json(json!({ "request_id": request_id, "options": options })).into_response())
}

#[derive(Debug, Deserialize)]
pub struct Finish {
    request_id: String,
    credential: Value,
}

pub async fn finish(
    State(state): State<AppState>,
    State(console): State<Arc<Console>>,
    signed: Signed,
    headers: HeaderMap,
    Json(body): Json<Finish>,
) -> Result<Response, ApiError> {
    let site = match admitted(&console, &signed, &headers) {
        Ok(site) => site,
        Err((status, message)) => return Ok(refused(status, message)),
    };
    let name = &signed.principal.name;
    let gone = "the registration expired or was replaced: start again";
    let Some(ceremony) = state.store.passkey_ceremony(&body.request_id, name).await? else {
        return Ok(refused(StatusCode::CONFLICT, gone));
    };
    let (Ok(ceremony), Ok(credential)) = (
        serde_json::from_value::<PasskeyRegistration>(ceremony),
        serde_json::from_value::<RegisterPublicKeyCredential>(body.credential),
    ) else {
        return Ok(refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the browser's answer is not a WebAuthn registration",
        ));
    };
    let passkey = match site
        .webauthn
        .finish_passkey_registration(&credential, &ceremony)
    {
        Ok(passkey) => passkey,
        Err(e) => {
            tracing::info!(principal = %name, error = %e, "passkey registration refused");
            return Ok(refused(
                StatusCode::UNPROCESSABLE_ENTITY,
                "the passkey's registration did not verify (origin, challenge or user verification)",
            ));
        }
    };
    let key = match &passkey.get_public_key().key {
        COSEKeyType::EC_EC2(ec) if ec.curve == ECDSACurve::SECP256R1 => {
            PasskeyKey::from_coordinates(&ec.x, &ec.y, &site.rp_id, &site.origin)
        }
        _ => None,
    };
    let Some(key) = key else {
        return Ok(refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            "this authenticator made a key of another kind than ES256 (P-256)",
        ));
    };
    let verified = VerifiedPasskey {
        public_key: PublicKey::Passkey(key),
        credential_id: passkey.cred_id().to_vec(),
    };
    let key_id = verified.public_key.key_id();
    if !state
        .store
        .finish_passkey_request(&body.request_id, name, &verified)
        .await?
    {
        return Ok(refused(
            StatusCode::CONFLICT,
            "this passkey was registered before, or the registration was replaced",
        ));
    }
    tracing::info!(principal = %name, key_id = %key_id, "passkey registration filed");
    Ok(Json(json!({ "key_id": key_id.as_str() })).into_response())
}

/// What the operation page says about signing an approval, for a person who may approve.
pub struct Signing {
    /// How many of the approvals must be signed (the operation's policy).
    pub required: i16,
    /// The passkey approval the page offers; `None` when the person has no registered
    /// passkey (or the console cannot use passkeys).
    pub passkey: Option<PasskeyOffer>,
}

/// The statement the passkey will sign, and what the browser needs to ask for it.
pub struct PasskeyOffer {
    pub statement: ApprovalStatement,
    /// The statement in words, every invisible or directional character made visible.
    pub in_words: String,
    /// `expires_at` as the statement writes it (posted back with the approval).
    pub expires_at: String,
    /// The WebAuthn challenge: the SHA-256 of the statement, base64url.
    pub challenge: String,
    pub rp_id: String,
    /// The person's passkeys' credential ids, a JSON array of base64url strings.
    pub credentials: String,
}

impl Signing {
    /// For `row`, approved now by `principal`.
    pub async fn of(
        state: &AppState,
        console: &Console,
        principal: &str,
        row: &OperationRow,
        now: DateTime<Utc>,
    ) -> Result<Signing, ApiError> {
        let required = row.signatures_required;
        let passkey = match expiry_for(row.approval_expires_at, now) {
            Some(expires_at) => {
                let statement = ApprovalStatement::derive(&row.statement_subject(), expires_at);
                let ask = PasskeyAsk::of(state, console, principal, &statement.to_bytes()).await?;
                ask.map(|ask| PasskeyOffer {
                    expires_at: format_expiry(statement.expires_at),
                    challenge: ask.challenge,
                    in_words: reveal(&statement.in_words()),
                    statement,
                    rp_id: ask.rp_id,
                    credentials: ask.credentials,
                })
            }
            None => None,
        };
        Ok(Signing { required, passkey })
    }
}
