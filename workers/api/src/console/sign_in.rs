//! Signing in and out. `start` sends the browser to the issuer with a fresh `state`,
//! `nonce` and PKCE challenge, remembered in a cookie of that browser only; `callback`
//! accepts the issuer's answer only with the same `state`, exchanges the code with the
//! PKCE verifier, checks the ID token, and starts a session for the principal whose
//! subject it names. The callback answers with a page that continues to the console:
//! the browser arrives there from the issuer's site, and only a navigation started on
//! the console's own page carries the SameSite=Strict session cookie.

use std::sync::Arc;

use askama::Template;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::handler::html;
use super::oidc::PendingSignIn;
use super::session::{
    cleared_session_cookie, new_secret, session_cookie, Signed, SIGN_IN_COOKIE, SIGN_IN_TTL_S,
};
use super::setup::Console;
use crate::cookies::{cookie, set_cookie};
use crate::state::AppState;

/// Whether the `state` the issuer returned is the one this browser started with, looking
/// at every byte whatever the first difference (the values are random and single-use, but
/// there is no reason to tell how much of one matched).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[derive(Template)]
#[template(path = "console/login.html")]
struct LoginPage {
    message: Option<String>,
}

#[derive(Template)]
#[template(path = "console/signed_in.html")]
struct SignedInPage {
    name: String,
}

fn login_with(status: StatusCode, message: &str) -> Response {
    let mut r = html(
        LoginPage {
            message: Some(message.to_owned()),
        }
        .render(),
    );
    *r.status_mut() = status;
    r
}

pub async fn login_page() -> Response {
    html(LoginPage { message: None }.render())
}

pub async fn start(State(c): State<Arc<Console>>) -> Response {
    match c.oidc.begin().await {
        Ok((url, pending)) => {
            let cookie = set_cookie(
                SIGN_IN_COOKIE,
                &pending.to_cookie_value(),
                "/console/auth",
                "Lax",
                SIGN_IN_TTL_S,
                c.secure_cookies,
            );
            ([(SET_COOKIE, cookie)], Redirect::to(&url)).into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, "console sign-in could not start");
            login_with(
                StatusCode::SERVICE_UNAVAILABLE,
                "The sign-in service did not answer. Try again in a moment.",
            )
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

pub async fn callback(
    State(state): State<AppState>,
    State(c): State<Arc<Console>>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let clear_sign_in = (
        SET_COOKIE,
        set_cookie(
            SIGN_IN_COOKIE,
            "",
            "/console/auth",
            "Lax",
            0,
            c.secure_cookies,
        ),
    );
    let pending =
        cookie(&headers, SIGN_IN_COOKIE).and_then(|v| PendingSignIn::from_cookie_value(&v));
    let (Some(pending), Some(code), Some(returned)) = (pending, q.code, q.state) else {
        let why = if q.error.is_some() {
            "The sign-in service did not sign you in."
        } else {
            "This sign-in was not started here, or took too long. Sign in again."
        };
        return ([clear_sign_in], login_with(StatusCode::BAD_REQUEST, why)).into_response();
    };
    if !same(&pending.state, &returned) {
        tracing::warn!("console sign-in refused: the state does not match this browser's");
        return (
            [clear_sign_in],
            login_with(
                StatusCode::BAD_REQUEST,
                "This sign-in was not started here. Sign in again.",
            ),
        )
            .into_response();
    }
    let verified = match c.oidc.finish(&code, pending).await {
        Ok(verified) => verified,
        Err(e) => {
            tracing::warn!(error = %e, "console sign-in refused");
            return (
                [clear_sign_in],
                login_with(
                    StatusCode::BAD_REQUEST,
                    "The sign-in could not be verified. Sign in again.",
                ),
            )
                .into_response();
        }
    };
    let subject = verified.subject.as_str();
    let principal = match state.store.principal_by_oidc_subject(subject).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            tracing::warn!("console sign-in refused: the subject is no principal's");
            let message = format!("You signed in as {subject}, who may not use this console. An admin can allow it with `fleetctl principal add --oidc-subject {subject} …`.");
            return ([clear_sign_in], login_with(StatusCode::FORBIDDEN, &message)).into_response();
        }
        Err(e) => return crate::error::ApiError::from(e).into_response(),
    };
    // With claims configured, the issuer says the role and tenants of this sign-in.
    let claimed = match &c.access_claims {
        None => None,
        Some(names) => {
            let claims = &verified.claims;
            match fleet_core::claimed_access(claims.get(&names.role), claims.get(&names.tenants)) {
                Ok(access) => Some(access),
                Err(why) => {
                    tracing::warn!(principal = %principal.name, reason = why, "console sign-in refused: the ID token's access claims");
                    let message = format!("You signed in as {subject}, but the sign-in service did not say what you may do here ({why}). Ask its administrator to set your role and tenants.");
                    return ([clear_sign_in], login_with(StatusCode::FORBIDDEN, &message))
                        .into_response();
                }
            }
        }
    };
    let secret = match new_secret() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "no randomness for a session");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
    };
    match state
        .store
        .start_session(
            &secret.hash(),
            &principal.name,
            "oidc",
            claimed.as_ref(),
            c.session_ttl_s,
        )
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            return (
                [clear_sign_in],
                login_with(StatusCode::FORBIDDEN, "Your principal was removed."),
            )
                .into_response()
        }
        Err(e) => return crate::error::ApiError::from(e).into_response(),
    }
    tracing::info!(principal = %principal.name, "signed in to the console");
    let page = html(
        SignedInPage {
            name: principal.name,
        }
        .render(),
    );
    // Two cookies: `AppendHeaders`, since a plain header array keeps only the last one.
    let cookies = AppendHeaders([
        clear_sign_in,
        session_cookie(&secret, c.session_ttl_s, c.secure_cookies),
    ]);
    (cookies, page).into_response()
}

#[derive(Debug, Deserialize)]
pub struct LogoutForm {
    form_token: Option<String>,
}

/// Ends the session (with the form token, so no other site can sign a person out). The
/// form is read only for a request with a session: without one there is nothing to end,
/// and nothing of its body is awaited.
pub async fn logout(
    State(state): State<AppState>,
    State(c): State<Arc<Console>>,
    request: Request,
) -> Response {
    let signed_out = (
        [cleared_session_cookie(c.secure_cookies)],
        Redirect::to("/console/login"),
    );
    let (parts, body) = request.into_parts();
    let signed = match Signed::of(&parts) {
        Ok(Some(signed)) => signed,
        Ok(None) => return signed_out.into_response(),
        Err(refused) => return refused.into_response(),
    };
    let f = match Form::<LogoutForm>::from_request(Request::from_parts(parts, body), &state).await {
        Ok(Form(f)) => f,
        Err(refused) => return refused.into_response(),
    };
    if !f
        .form_token
        .as_deref()
        .is_some_and(|t| signed.secret.form_token_matches(t))
    {
        return (
            StatusCode::FORBIDDEN,
            "this form did not come from your console session",
        )
            .into_response();
    }
    if let Err(e) = state.store.end_session(&signed.secret.hash()).await {
        return crate::error::ApiError::from(e).into_response();
    }
    signed_out.into_response()
}
