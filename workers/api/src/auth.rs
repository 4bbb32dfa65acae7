//! Authentication: `Authorization: Bearer <token>` → the principal it belongs to. The
//! token is hashed at once and only its hash is looked up; the token itself is never
//! logged, stored or echoed. Anything wrong with it is one answer, 401 `unauthorized`, so a
//! caller cannot tell a revoked token from one that never existed; only an expired token
//! gets its own code, `token_expired` (telling it apart needs the whole token, so it says
//! nothing to anyone else). A token limited to some tenants makes its caller act for
//! those of its principal's only. The same check guards the JSON routes and `/mcp`, and
//! counts the request against the principal's rate ([`crate::rate_limit`]).
//!
//! Who a request comes from is found out once, by [`identify`], before the request takes
//! a slot and before any body is read: its bearer token and its console session cookie,
//! each looked up only while its source address has not sent too many refused
//! credentials, and a request without any counted against its address's rate. The
//! extractors ([`Caller`], the console's `Signed`) then read what it found.

use std::net::IpAddr;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use fleet_core::authz;
use fleet_core::session::SessionSecret;
use fleet_core::{ApiAction, SignIn, TokenHash};
use fleet_runtime::PeerAddr;
use fleet_store::{Principal, TokenCheck};

use crate::cookies::{cookie, SESSION_COOKIE};
use crate::decisions::{Addressed, Asking};
use crate::error::ApiError;
use crate::state::AppState;

/// The authenticated caller of a request (by a bearer token).
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl Caller {
    /// Refuses a caller whose role may not do `what` (the authorization rules' first
    /// check, which needs no lookup).
    pub fn may(&self, what: ApiAction) -> Result<(), ApiError> {
        Ok(authz::may(&self.0.actor(), what)?)
    }

    /// How this caller signed in, as its decisions record it.
    pub fn signed_in_with(&self) -> SignIn {
        SignIn::Token
    }

    /// This caller asking for a decision on the operation `at` names.
    pub fn asking<'a>(&'a self, at: Addressed<'a>) -> Asking<'a> {
        Asking {
            who: self.0.actor(),
            signed_in: self.signed_in_with(),
            at,
        }
    }
}

fn presented_hash(headers: &HeaderMap) -> Option<TokenHash> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    TokenHash::of_presented(token.trim())
}

/// Who a request comes from, as [`identify`] found out: in its extensions.
#[derive(Debug, Clone, Default)]
pub struct Identified {
    /// The source address of its connection.
    pub from: Option<IpAddr>,
    /// Its bearer token's principal, or why not; `None` without an `Authorization` header.
    pub bearer: Option<Result<Principal, ApiError>>,
    /// Its console session's principal (`Ok(None)`: the session ended or never was);
    /// `None` without a session cookie.
    pub session: Option<Result<Option<Principal>, ApiError>>,
}

impl Identified {
    /// The principal the request is authenticated as, by either credential.
    pub fn principal(&self) -> Option<&Principal> {
        match (&self.bearer, &self.session) {
            (Some(Ok(p)), _) | (_, Some(Ok(Some(p)))) => Some(p),
            _ => None,
        }
    }
}

/// The middleware: finds out who the request comes from (see the module's comment) and
/// leaves it in the request's extensions; 429 `rate_limited` when its address or its
/// principal went too fast, before anything else is done.
pub async fn identify(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let from = request.extensions().get::<PeerAddr>().map(|p| p.0.ip());
    match identified(&state, request.headers(), from).await {
        Ok(found) => {
            request.extensions_mut().insert(found);
            next.run(request).await
        }
        Err(refused) => refused.into_response(),
    }
}

async fn identified(
    state: &AppState,
    headers: &HeaderMap,
    from: Option<IpAddr>,
) -> Result<Identified, ApiError> {
    let limits = &state.address_limits;
    let bearer = headers.get(AUTHORIZATION).map(|_| presented_hash(headers));
    let session = cookie(headers, SESSION_COOKIE).map(|v| SessionSecret::of_presented(&v));
    let mut found = Identified {
        from,
        ..Identified::default()
    };
    if bearer.is_none() && session.is_none() {
        if let Some(from) = from {
            limits.anonymous(from)?;
        }
        return Ok(found);
    }
    if let Some(from) = from {
        limits.may_look_up(from)?;
    }
    let refused = |e: ApiError| {
        if let Some(from) = from {
            limits.refused(from);
        }
        Err(e)
    };
    found.bearer = match bearer {
        None => None,
        Some(None) => Some(refused(ApiError::Unauthorized)),
        Some(Some(hash)) => Some(match state.store.check_token(&hash).await {
            Ok(TokenCheck::Valid(principal)) => {
                state.rate_limits.check(&principal.name)?;
                Ok(principal)
            }
            Ok(TokenCheck::Expired) => refused(ApiError::TokenExpired),
            Ok(TokenCheck::Refused) => refused(ApiError::Unauthorized),
            Err(e) => Err(e.into()),
        }),
    };
    found.session = match session {
        None => None,
        Some(None) => {
            let _ = refused(ApiError::Unauthorized);
            Some(Ok(None))
        }
        Some(Some(secret)) => Some(match state.store.session_principal(&secret.hash()).await {
            Ok(Some(principal)) => Ok(Some(principal)),
            Ok(None) => {
                let _ = refused(ApiError::Unauthorized);
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }),
    };
    Ok(found)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        match parts
            .extensions
            .get::<Identified>()
            .map(|i| i.bearer.clone())
        {
            Some(Some(found)) => found.map(Caller),
            _ => Err(ApiError::Unauthorized),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;
    use fleet_core::access::TOKEN_SECRET_BYTES;
    use fleet_core::Token;

    fn parts(auth: Option<&str>) -> HeaderMap {
        let mut builder = Request::builder();
        if let Some(a) = auth {
            builder = builder.header(AUTHORIZATION, a);
        }
        builder.body(()).unwrap().into_parts().0.headers
    }

    #[test]
    fn only_a_well_formed_bearer_token_is_looked_up() {
        let token = Token::from_secret_bytes(&[9; TOKEN_SECRET_BYTES]);
        let good = format!("Bearer {}", token.expose());
        assert_eq!(presented_hash(&parts(Some(&good))), Some(token.hash()));
        assert_eq!(
            presented_hash(&parts(Some(&format!("bearer {}", token.expose())))),
            Some(token.hash())
        );
        for bad in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer "),
            Some("Basic dXNlcjpwYXNz"),
            Some(token.expose()),
            Some("Bearer fleet_nothex"),
        ] {
            assert_eq!(presented_hash(&parts(bad)), None, "{bad:?}");
        }
    }
}
