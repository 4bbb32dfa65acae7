//! Authentication: `Authorization: Bearer <token>` → the principal it belongs to. The
//! token is hashed at once and only its hash is looked up; the token itself is never
//! logged, stored or echoed. Anything wrong with it is one answer, 401 `unauthorized`, so a
//! caller cannot tell a revoked token from one that never existed; only an expired token
//! gets its own code, `token_expired` (telling it apart needs the whole token, so it says
//! nothing to anyone else). A token limited to some tenants makes its caller act for
//! those of its principal's only. The same check guards the JSON routes and `/mcp`, and
//! counts the request against the principal's rate ([`crate::rate_limit`]).

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use fleet_core::authz;
use fleet_core::{ApiAction, SignIn, TokenHash};
use fleet_store::{Principal, TokenCheck};

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

fn presented_hash(parts: &Parts) -> Option<TokenHash> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    TokenHash::of_presented(token.trim())
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let hash = presented_hash(parts).ok_or(ApiError::Unauthorized)?;
        match state.store.check_token(&hash).await? {
            TokenCheck::Valid(principal) => {
                state.rate_limits.check(&principal.name)?;
                Ok(Caller(principal))
            }
            TokenCheck::Expired => Err(ApiError::TokenExpired),
            TokenCheck::Refused => Err(ApiError::Unauthorized),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;
    use fleet_core::access::TOKEN_SECRET_BYTES;
    use fleet_core::Token;

    fn parts(auth: Option<&str>) -> Parts {
        let mut builder = Request::builder();
        if let Some(a) = auth {
            builder = builder.header(AUTHORIZATION, a);
        }
        builder.body(()).unwrap().into_parts().0
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
