//! Signing in with OpenID Connect: the authorization code flow with PKCE (S256), a
//! `state` bound to the browser that started the sign-in, and a `nonce` bound into the ID
//! token. The ID token's signature (the issuer's published keys), issuer, audience, expiry
//! and nonce are all checked before its subject is believed. Its signature algorithm must
//! be one of `OIDC_ID_TOKEN_ALGS` (asymmetric only), whatever the discovery document
//! advertises: the client library would otherwise take the advertised list, and with a
//! client secret configured accept an HS256 token keyed with that secret.
//!
//! The issuer's discovery document and keys are read on the first sign-in and kept; a
//! sign-in whose token fails the checks forgets them, so keys the issuer rotated are read
//! again on the next try. An issuer that is down never stops the API itself.

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreJwsSigningAlgorithm, CoreProviderMetadata,
};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    TokenResponse,
};
use tokio::sync::RwLock;

type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Everything a sign-in in progress must remember until the browser comes back: kept in
/// a short-lived cookie of the browser that started it (`state.nonce.verifier`, each
/// URL-safe base64), never on the server.
#[derive(Debug)]
pub struct PendingSignIn {
    pub state: String,
    pub nonce: String,
    pub verifier: String,
}

impl PendingSignIn {
    pub fn to_cookie_value(&self) -> String {
        format!("{}.{}.{}", self.state, self.nonce, self.verifier)
    }

    pub fn from_cookie_value(value: &str) -> Option<PendingSignIn> {
        let mut parts = value.split('.');
        let (state, nonce, verifier) = (parts.next()?, parts.next()?, parts.next()?);
        let url_safe = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        (parts.next().is_none() && url_safe(state) && url_safe(nonce) && url_safe(verifier)).then(
            || PendingSignIn {
                state: state.to_owned(),
                nonce: nonce.to_owned(),
                verifier: verifier.to_owned(),
            },
        )
    }
}

/// A verified ID token: its subject, and every claim it carries (for a console that takes
/// roles and tenants from configured claims).
#[derive(Debug)]
pub struct Verified {
    pub subject: String,
    pub claims: serde_json::Value,
}

/// The claims of a compact JWT (its middle part, base64url JSON); `Null` if unreadable.
fn payload_of(jwt: &str) -> serde_json::Value {
    use base64::Engine as _;
    jwt.split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// An error and its causes, `: `-separated: the client library's top-level message alone
/// ("Signature verification failed") does not say which check refused the token.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("the issuer could not be reached or described itself wrongly: {0}")]
    Issuer(String),
    #[error("the issuer refused the code: {0}")]
    Exchange(String),
    #[error("the ID token failed its checks: {0}")]
    IdToken(String),
}

pub struct Oidc {
    issuer: String,
    client_id: String,
    client_secret: String,
    redirect: RedirectUrl,
    /// The only algorithms an ID token may be signed with (asymmetric, from the settings).
    id_token_algs: Vec<CoreJwsSigningAlgorithm>,
    http: reqwest::Client,
    client: RwLock<Option<Client>>,
}

impl Oidc {
    pub fn new(
        issuer: &str,
        client_id: &str,
        client_secret: &str,
        redirect_url: &str,
        id_token_algs: Vec<CoreJwsSigningAlgorithm>,
    ) -> Result<Oidc, String> {
        if id_token_algs.is_empty() {
            return Err("OIDC_ID_TOKEN_ALGS names no algorithm".to_owned());
        }
        IssuerUrl::new(issuer.to_owned()).map_err(|e| format!("OIDC_ISSUER_URL: {e}"))?;
        let redirect = RedirectUrl::new(redirect_url.to_owned())
            .map_err(|e| format!("the sign-in redirect URL: {e}"))?;
        let http = reqwest::Client::builder()
            // Following redirects would let a crafted discovery document point the
            // server's requests anywhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Oidc {
            issuer: issuer.to_owned(),
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            redirect,
            id_token_algs,
            http,
            client: RwLock::new(None),
        })
    }

    async fn client(&self) -> Result<Client, SignInError> {
        if let Some(c) = self.client.read().await.as_ref() {
            return Ok(c.clone());
        }
        let issuer =
            IssuerUrl::new(self.issuer.clone()).map_err(|e| SignInError::Issuer(e.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| SignInError::Issuer(e.to_string()))?;
        let secret =
            (!self.client_secret.is_empty()).then(|| ClientSecret::new(self.client_secret.clone()));
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.client_id.clone()),
            secret,
        )
        .set_redirect_uri(self.redirect.clone());
        *self.client.write().await = Some(client.clone());
        Ok(client)
    }

    /// Where to send the browser, and what it must bring back.
    pub async fn begin(&self) -> Result<(String, PendingSignIn), SignInError> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("openid".into()))
            .set_pkce_challenge(challenge)
            .url();
        let pending = PendingSignIn {
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
        };
        Ok((url.to_string(), pending))
    }

    /// Exchanges the code (with the PKCE verifier) and checks the ID token; its subject and
    /// its claims.
    pub async fn finish(
        &self,
        code: &str,
        pending: PendingSignIn,
    ) -> Result<Verified, SignInError> {
        let client = self.client().await?;
        let request = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| SignInError::Issuer(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier));
        let response = request
            .request_async(&self.http)
            .await
            .map_err(|e| SignInError::Exchange(e.to_string()))?;
        // Our list replaces the one the client took from discovery; nothing here ever
        // calls `allow_any_alg`.
        let verifier = client
            .id_token_verifier()
            .set_allowed_algs(self.id_token_algs.iter().cloned());
        let checked = match response.id_token() {
            None => Err(SignInError::IdToken("the issuer sent no ID token".into())),
            Some(token) => token
                .claims(&verifier, &Nonce::new(pending.nonce))
                .map(|claims| Verified {
                    subject: claims.subject().as_str().to_owned(),
                    // The token passed every check above: its payload is the issuer's word.
                    claims: payload_of(&token.to_string()),
                })
                .map_err(|e| SignInError::IdToken(with_causes(&e))),
        };
        if checked.is_err() {
            // Perhaps the issuer rotated its keys: read them again next time.
            *self.client.write().await = None;
        }
        checked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_sign_in_round_trips_through_its_cookie_and_nothing_else_does() {
        let p = PendingSignIn {
            state: "s-1_a".into(),
            nonce: "n2".into(),
            verifier: "v3".into(),
        };
        let back = PendingSignIn::from_cookie_value(&p.to_cookie_value()).unwrap();
        assert_eq!(
            (
                back.state.as_str(),
                back.nonce.as_str(),
                back.verifier.as_str()
            ),
            ("s-1_a", "n2", "v3")
        );
        for bad in ["", "a.b", "a.b.c.d", "a..c", "a.b.c;", "a.b.c d"] {
            assert!(PendingSignIn::from_cookie_value(bad).is_none(), "{bad:?}");
        }
    }
}
