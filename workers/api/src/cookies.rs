//! The request's cookies, read and written. Authentication reads the console's session
//! cookie before any route runs ([`crate::auth::identify`]); the console sets it when a
//! person signs in ([`crate::console::session`]).

use axum::http::header::COOKIE;
use axum::http::{HeaderMap, HeaderValue};

/// The console session's cookie.
pub const SESSION_COOKIE: &str = "fleet_console";

/// The value of the cookie `name`, from every `Cookie` header of the request.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// `Set-Cookie` for `name=value` with the console's attributes; `max_age_s` 0 deletes it.
pub fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    same_site: &str,
    max_age_s: u64,
    secure: bool,
) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path={path}; Max-Age={max_age_s}; HttpOnly; SameSite={same_site}{secure}"
    ))
    .expect("cookie values are URL-safe text")
}
