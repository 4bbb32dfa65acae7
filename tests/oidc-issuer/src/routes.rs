//! The issuer's endpoints.

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Json, Router};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{now_s, random_token, Grant, IdTokenSigning, Shared};

const CODE_TTL_S: u64 = 60;

pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/authorize", get(authorize_page).post(authorize))
        .route("/token", axum::routing::post(token))
        .with_state(state)
}

async fn discovery(State(s): State<Shared>) -> Json<serde_json::Value> {
    let base = &s.issuer_url;
    let alg = match s.config.id_token_signing {
        IdTokenSigning::Rs256 => "RS256",
        IdTokenSigning::Hs256WithClientSecret => "HS256",
    };
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "jwks_uri": format!("{base}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [alg],
        "scopes_supported": ["openid", "profile"],
        "grant_types_supported": ["authorization_code"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "name"],
    }))
}

async fn jwks(State(s): State<Shared>) -> Json<serde_json::Value> {
    Json(json!({"keys": [s.key.jwk()]}))
}

/// The authorization request's parameters (and, posted back, the chosen user).
#[derive(Debug, Deserialize)]
struct AuthorizeParams {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    scope: Option<String>,
    state: Option<String>,
    nonce: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    login_hint: Option<String>,
    user: Option<String>,
}

fn bad_request(why: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        format!("invalid authorization request: {why}\n"),
    )
        .into_response()
}

/// What is wrong with an authorization request, if anything.
fn check(s: &Shared, p: &AuthorizeParams) -> Result<(), &'static str> {
    if p.client_id.as_deref() != Some(s.config.client_id.as_str()) {
        return Err("unknown client_id");
    }
    if p.response_type.as_deref() != Some("code") {
        return Err("response_type must be code");
    }
    if !p
        .scope
        .as_deref()
        .unwrap_or("")
        .split(' ')
        .any(|x| x == "openid")
    {
        return Err("the openid scope is required");
    }
    if !p
        .redirect_uri
        .as_deref()
        .is_some_and(|u| u.starts_with("http://") || u.starts_with("https://"))
    {
        return Err("redirect_uri must be an http(s) URL");
    }
    // PKCE is required, and only with SHA-256.
    if p.code_challenge.as_deref().is_none_or(str::is_empty)
        || p.code_challenge_method.as_deref() != Some("S256")
    {
        return Err("a PKCE code_challenge with code_challenge_method S256 is required");
    }
    Ok(())
}

async fn authorize_page(State(s): State<Shared>, Query(p): Query<AuthorizeParams>) -> Response {
    if let Err(why) = check(&s, &p) {
        return bad_request(why);
    }
    if let Some(hint) = p.login_hint.clone() {
        return sign_in(&s, &p, &hint);
    }
    let hidden: String = [
        ("response_type", &p.response_type),
        ("client_id", &p.client_id),
        ("redirect_uri", &p.redirect_uri),
        ("scope", &p.scope),
        ("state", &p.state),
        ("nonce", &p.nonce),
        ("code_challenge", &p.code_challenge),
        ("code_challenge_method", &p.code_challenge_method),
    ]
    .iter()
    .filter_map(|(k, v)| {
        v.as_ref().map(|v| {
            format!(
                "<input type=\"hidden\" name=\"{k}\" value=\"{}\">",
                escape(v)
            )
        })
    })
    .collect();
    let buttons: String = s
        .config
        .users
        .iter()
        .map(|u| {
            format!(
                "<p><button type=\"submit\" name=\"user\" value=\"{}\">Sign in as {}</button></p>",
                escape(&u.subject),
                escape(&u.name)
            )
        })
        .collect();
    Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Test issuer: sign in</title></head>\
         <body><h1>Test issuer</h1><p>Choose who signs in.</p>\
         <form method=\"post\" action=\"/authorize\">{hidden}{buttons}</form></body></html>"
    ))
    .into_response()
}

async fn authorize(State(s): State<Shared>, Form(p): Form<AuthorizeParams>) -> Response {
    if let Err(why) = check(&s, &p) {
        return bad_request(why);
    }
    match p.user.clone() {
        Some(user) => sign_in(&s, &p, &user),
        None => bad_request("no user chosen"),
    }
}

/// Issues a one-time code for `subject` and sends the browser back to the client.
fn sign_in(s: &Shared, p: &AuthorizeParams, subject: &str) -> Response {
    let Some(user) = s.config.users.iter().find(|u| u.subject == subject) else {
        return bad_request("no such user");
    };
    let redirect_uri = p.redirect_uri.clone().unwrap_or_default();
    let code = random_token();
    let grant = Grant {
        subject: user.subject.clone(),
        name: user.name.clone(),
        claims: user.claims.clone(),
        redirect_uri: redirect_uri.clone(),
        nonce: p.nonce.clone(),
        code_challenge: p.code_challenge.clone().unwrap_or_default(),
        issued_at_s: now_s(),
    };
    s.codes
        .lock()
        .expect("codes lock")
        .insert(code.clone(), grant);
    let sep = if redirect_uri.contains('?') { '&' } else { '?' };
    let mut to = format!("{redirect_uri}{sep}code={}", percent_encode(&code));
    if let Some(state) = &p.state {
        to.push_str(&format!("&state={}", percent_encode(state)));
    }
    Redirect::to(&to).into_response()
}

#[derive(Debug, Deserialize)]
struct TokenRequest {
    grant_type: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    code_verifier: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

fn token_error(status: StatusCode, error: &str) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({"error": error})),
    )
        .into_response()
}

/// The client's id and secret from HTTP Basic (RFC 6749, section 2.3.1) or from the form.
fn client_credentials(headers: &HeaderMap, form: &TokenRequest) -> Option<(String, String)> {
    if let Some(basic) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let decoded = String::from_utf8(STANDARD.decode(basic.trim()).ok()?).ok()?;
        let (id, secret) = decoded.split_once(':')?;
        return Some((percent_decode(id), percent_decode(secret)));
    }
    Some((form.client_id.clone()?, form.client_secret.clone()?))
}

async fn token(
    State(s): State<Shared>,
    headers: HeaderMap,
    Form(t): Form<TokenRequest>,
) -> Response {
    let authenticated = client_credentials(&headers, &t)
        .is_some_and(|(id, secret)| id == s.config.client_id && secret == s.config.client_secret);
    if !authenticated {
        return token_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if t.grant_type.as_deref() != Some("authorization_code") {
        return token_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
    // A code is used once, whatever happens next.
    let grant = t
        .code
        .as_ref()
        .and_then(|c| s.codes.lock().expect("codes lock").remove(c));
    let Some(grant) = grant else {
        return token_error(StatusCode::BAD_REQUEST, "invalid_grant");
    };
    let verifier_matches = t.code_verifier.as_deref().is_some_and(|v| {
        URL_SAFE_NO_PAD.encode(Sha256::digest(v.as_bytes())) == grant.code_challenge
    });
    let fresh = now_s() <= grant.issued_at_s + CODE_TTL_S;
    if !verifier_matches || !fresh || t.redirect_uri.as_deref() != Some(grant.redirect_uri.as_str())
    {
        return token_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let now = now_s();
    let mut claims = json!({
        "iss": s.issuer_url,
        "sub": grant.subject,
        "aud": s.config.client_id,
        "iat": now,
        "auth_time": grant.issued_at_s,
        "exp": now + s.config.id_token_ttl_s,
        "name": grant.name,
    });
    if let Some(nonce) = grant.nonce {
        claims["nonce"] = json!(nonce);
    }
    for (k, v) in grant.claims {
        claims[k] = v;
    }
    let body = json!({
        "access_token": random_token(),
        "token_type": "Bearer",
        "expires_in": s.config.id_token_ttl_s,
        "scope": "openid",
        "id_token": match s.config.id_token_signing {
            IdTokenSigning::Rs256 => s.key.sign(&claims),
            IdTokenSigning::Hs256WithClientSecret => {
                crate::jwt::sign_hs256(&s.config.client_secret, &claims)
            }
        },
    });
    ([(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or(""),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
