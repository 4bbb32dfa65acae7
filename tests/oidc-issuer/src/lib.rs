//! A test OpenID Connect issuer (authorization code flow with PKCE).
//!
//! | route | what |
//! |---|---|
//! | `GET /.well-known/openid-configuration` | discovery |
//! | `GET /jwks` | the public half of the RSA key generated at start |
//! | `GET /authorize` | a page listing the configured users, one button each; with `login_hint=<subject>` the user is signed in at once |
//! | `POST /authorize` | signs the chosen user in: redirects back with a one-time code |
//! | `POST /token` | exchanges the code (client secret by HTTP Basic or in the form, the PKCE verifier, the same redirect URI) for a signed ID token (RS256; HS256 with the client secret when configured so, to test that a client refuses it) |
//!
//! Codes are single use and live 60 s. Only `S256` PKCE challenges are accepted and a
//! challenge is required, so a client that does not send PKCE cannot sign in at all.

mod jwt;
mod routes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use jwt::SigningKey;

/// How the issuer signs ID tokens (and the one algorithm its discovery document
/// advertises).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdTokenSigning {
    /// RS256 with the RSA key of its JWKS: what a real issuer does.
    Rs256,
    /// HS256 keyed with the client secret: a token any holder of the secret could have
    /// made, which a client must refuse however the issuer advertises it.
    Hs256WithClientSecret,
}

/// A person the issuer can sign in.
#[derive(Debug, Clone)]
pub struct TestUser {
    /// The `sub` claim.
    pub subject: String,
    /// The `name` claim, and the button's label.
    pub name: String,
    /// More claims for the ID token (an object; e.g. a role and tenants for a client that
    /// takes them from a claim).
    pub claims: serde_json::Map<String, serde_json::Value>,
}

impl TestUser {
    pub fn new(subject: &str, name: &str) -> TestUser {
        TestUser {
            subject: subject.into(),
            name: name.into(),
            claims: serde_json::Map::new(),
        }
    }

    /// The same user with `claims` in its ID tokens too.
    pub fn with_claims(mut self, claims: serde_json::Value) -> TestUser {
        if let serde_json::Value::Object(map) = claims {
            self.claims.extend(map);
        }
        self
    }
}

#[derive(Debug, Clone)]
pub struct IssuerConfig {
    pub client_id: String,
    pub client_secret: String,
    /// The host name in the issuer URL (`localhost` by default: to a browser, another site
    /// than a console served on `127.0.0.1`, as a real issuer would be).
    pub host: String,
    pub users: Vec<TestUser>,
    /// Lifetime of an ID token, in seconds.
    pub id_token_ttl_s: u64,
    pub id_token_signing: IdTokenSigning,
}

impl Default for IssuerConfig {
    fn default() -> Self {
        IssuerConfig {
            client_id: "fleet-console".into(),
            client_secret: "console-test-secret".into(),
            host: "localhost".into(),
            users: Vec::new(),
            id_token_ttl_s: 300,
            id_token_signing: IdTokenSigning::Rs256,
        }
    }
}

/// What one code stands for until it is exchanged.
#[derive(Debug, Clone)]
struct Grant {
    subject: String,
    name: String,
    claims: serde_json::Map<String, serde_json::Value>,
    redirect_uri: String,
    nonce: Option<String>,
    code_challenge: String,
    issued_at_s: u64,
}

struct State {
    config: IssuerConfig,
    issuer_url: String,
    key: SigningKey,
    codes: Mutex<HashMap<String, Grant>>,
}

type Shared = Arc<State>;

/// A running issuer; it stops when dropped.
pub struct RunningIssuer {
    /// `http://<host>:<port>`, exactly as the discovery document's `issuer`.
    pub issuer_url: String,
    pub client_id: String,
    pub client_secret: String,
    task: JoinHandle<()>,
}

impl Drop for RunningIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// [`spawn`] on a free port of 127.0.0.1, for a test that starts its own issuer.
pub async fn spawn_on_loopback(config: IssuerConfig) -> anyhow::Result<RunningIssuer> {
    spawn(config, TcpListener::bind("127.0.0.1:0").await?).await
}

/// Serves the issuer on `listener` with a freshly generated RSA key.
pub async fn spawn(config: IssuerConfig, listener: TcpListener) -> anyhow::Result<RunningIssuer> {
    let port = listener.local_addr()?.port();
    let issuer_url = format!("http://{}:{port}", config.host);
    // Key generation is CPU work; keep it off the async threads.
    let key = tokio::task::spawn_blocking(SigningKey::generate).await??;
    let state = Arc::new(State {
        issuer_url: issuer_url.clone(),
        key,
        codes: Mutex::new(HashMap::new()),
        config: config.clone(),
    });
    let app = routes::router(state);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(RunningIssuer {
        issuer_url,
        client_id: config.client_id,
        client_secret: config.client_secret,
        task,
    })
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// 32 random bytes, base64url: codes and access tokens.
fn random_token() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("randomness from the operating system");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
