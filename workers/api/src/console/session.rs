//! Console sessions in the browser: the session cookie (HttpOnly, SameSite=Strict, Secure
//! over https, path /console), the short-lived cookie of a sign-in in progress
//! (SameSite=Lax: the issuer sends the browser back from another site, and only a Lax
//! cookie comes along on that navigation), and the [`Signed`] extractor that turns a
//! session cookie into its principal, or sends the browser to sign in. The session is
//! looked up once per request, before its body is read ([`crate::auth::identify`]).

use axum::extract::FromRequestParts;
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Redirect, Response};
use fleet_core::session::{SessionSecret, SESSION_SECRET_BYTES};
use fleet_store::Principal;

use super::present::Me;
use crate::auth::Identified;
use crate::cookies::{cookie, set_cookie, SESSION_COOKIE};
use crate::error::ApiError;

pub const SIGN_IN_COOKIE: &str = "fleet_console_sign_in";
/// How long a started sign-in may take at the issuer, in seconds.
pub const SIGN_IN_TTL_S: u64 = 600;

/// A signed-in person: the principal (role and tenants as they are now) and the session's
/// secret, from which every form's token is derived.
pub struct Signed {
    pub principal: Principal,
    pub secret: SessionSecret,
}

impl Signed {
    /// Who is signed in, as every page shows them, with the form token its forms carry.
    pub fn me(&self) -> Me {
        Me::of(&self.principal, self.secret.form_token())
    }
}

/// A fresh session secret from the operating system's random generator.
pub fn new_secret() -> Result<SessionSecret, getrandom::Error> {
    let mut bytes = [0u8; SESSION_SECRET_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(SessionSecret::from_secret_bytes(&bytes))
}

pub fn session_cookie(
    secret: &SessionSecret,
    ttl_s: u64,
    secure: bool,
) -> (axum::http::HeaderName, HeaderValue) {
    (
        SET_COOKIE,
        set_cookie(
            SESSION_COOKIE,
            secret.expose(),
            "/console",
            "Strict",
            ttl_s,
            secure,
        ),
    )
}

pub fn cleared_session_cookie(secure: bool) -> (axum::http::HeaderName, HeaderValue) {
    (
        SET_COOKIE,
        set_cookie(SESSION_COOKIE, "", "/console", "Strict", 0, secure),
    )
}

fn to_sign_in() -> Response {
    Redirect::to("/console/login").into_response()
}

impl Signed {
    /// The request's session: `Ok(None)` without one (no cookie, or a session that ended),
    /// the refusal to answer when it could not be looked up.
    pub fn of(parts: &Parts) -> Result<Option<Signed>, ApiError> {
        let found = parts
            .extensions
            .get::<Identified>()
            .and_then(|i| i.session.clone());
        let principal = match found {
            Some(Ok(Some(principal))) => principal,
            None | Some(Ok(None)) => return Ok(None),
            Some(Err(e)) => return Err(e),
        };
        // The cookie the session was found by, read again.
        let secret =
            cookie(&parts.headers, SESSION_COOKIE).and_then(|v| SessionSecret::of_presented(&v));
        Ok(secret.map(|secret| Signed { principal, secret }))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Signed::of(parts)
            .map_err(IntoResponse::into_response)?
            .ok_or_else(to_sign_in)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header::COOKIE;
    use axum::http::HeaderMap;

    #[test]
    fn cookies_are_found_by_name_across_headers() {
        let mut h = HeaderMap::new();
        h.append(COOKIE, HeaderValue::from_static("a=1; fleet_console=fcs_x"));
        h.append(
            COOKIE,
            HeaderValue::from_static("fleet_console_sign_in=s.n.v"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE).as_deref(), Some("fcs_x"));
        assert_eq!(cookie(&h, SIGN_IN_COOKIE).as_deref(), Some("s.n.v"));
        assert_eq!(cookie(&h, "b"), None);
    }

    #[test]
    fn the_session_cookie_is_http_only_strict_and_secure_over_https() {
        let s = set_cookie(SESSION_COOKIE, "v", "/console", "Strict", 60, true);
        assert_eq!(
            s.to_str().unwrap(),
            "fleet_console=v; Path=/console; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
        );
        let plain = set_cookie(SESSION_COOKIE, "v", "/console", "Strict", 60, false);
        assert!(!plain.to_str().unwrap().contains("Secure"));
    }
}
