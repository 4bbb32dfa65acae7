//! The console under `/console`: server-rendered pages for people. Approvers see what
//! waits for them in words and approve the exact snapshot shown; operators settle what
//! the workers could not. People sign in with OpenID Connect ([`oidc`], [`sign_in`]);
//! sessions live in Postgres and in an HttpOnly, SameSite=Strict cookie ([`session`]);
//! every form carries the session's form token and every decision goes through the
//! same functions as the JSON routes ([`crate::decisions`]). The only script any page
//! runs is the console's own `passkey.js` (the Content-Security-Policy allows no other,
//! and no inline script): WebAuthn has no form to post, so creating a passkey and
//! signing an approval with it take a few lines of script ([`passkeys`]).
//!
//! | route | what |
//! |---|---|
//! | `GET /console` | the inbox: pending approvals in my tenants, soonest expiry first |
//! | `GET /console/operations` | search by id, status, tenant |
//! | `GET /console/operations/{id}` | one operation: the snapshot in words, the decision forms, attempts, lookups, timeline |
//! | `GET /console/queue` | the operator queue: unknown and escalated operations, with why |
//! | `POST /console/operations/{id}/{approve,reject,resolve,dispute}` | decisions ([`forms`]) |
//! | `GET /console/passkeys`, `POST /console/passkeys/{start,finish}` | creating a passkey ([`passkeys`]) |
//! | `GET /console/mandates`, `/console/mandates/{new,{id}}`; `POST /console/mandates`, `/console/mandates/{review,{id}/revoke}` | standing mandates: listed, composed, signed with a passkey, revoked ([`mandates`]) |
//! | `GET /console/batch`, `/console/batch/review`; `POST /console/batch` | select and approve several operations in one signed decision ([`batch`]) |
//! | `GET /console/login`, `/console/login/start`, `/console/auth/callback`; `POST /console/logout` | signing in and out |

pub mod batch;
pub mod done;
pub mod form_fields;
pub mod forms;
mod handler;
pub mod mandates;
pub mod oidc;
pub mod original_charge;
pub mod pages;
pub mod passkey_sign;
pub mod passkey_site;
pub mod passkeys;
pub mod present;
pub mod session;
pub mod settings;
pub mod setup;
pub mod sign_in;

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

pub use settings::ConsoleSettings;
pub use setup::{AccessClaims, Console};

use crate::state::AppState;
use handler::ConsoleState;

/// Scripts, styles and images from the console only (no inline script, no other origin),
/// requests and forms to the console only, never framed.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        // Pages name people, tenants and amounts: never kept by a cache.
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

const STYLESHEET: &str = include_str!("../../assets/console.css");

const PASSKEY_SCRIPT: &str = include_str!("../../assets/passkey.js");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        body,
    )
        .into_response()
}

async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", STYLESHEET)
}

async fn passkey_script() -> Response {
    asset("text/javascript; charset=utf-8", PASSKEY_SCRIPT)
}

/// The console's routes (empty when no issuer is configured).
pub fn router(app: AppState, console: Option<Arc<Console>>) -> Router {
    let Some(console) = console else {
        return Router::new();
    };
    Router::new()
        .route("/console", get(pages::inbox))
        .route("/console/operations", get(pages::operations))
        .route("/console/operations/{id}", get(pages::operation))
        .route("/console/queue", get(pages::queue))
        .merge(forms::routes())
        .merge(mandates::routes())
        .merge(batch::routes())
        .route("/console/login", get(sign_in::login_page))
        .route("/console/login/start", get(sign_in::start))
        .route("/console/auth/callback", get(sign_in::callback))
        .route("/console/logout", post(sign_in::logout))
        .route("/console/passkeys", get(passkeys::page))
        .route("/console/passkeys/start", post(passkeys::start))
        .route("/console/passkeys/finish", post(passkeys::finish))
        .route("/console/assets/console.css", get(stylesheet))
        .route("/console/assets/passkey.js", get(passkey_script))
        .layer(middleware::from_fn(security_headers))
        .with_state(ConsoleState { app, console })
}
