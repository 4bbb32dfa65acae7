//! The test issuer honours PKCE: a code is exchanged only with the verifier of the
//! challenge it was issued for, only once, and only by the client with its secret.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use fleet_oidc_issuer::{IssuerConfig, RunningIssuer, TestUser};
use serde_json::Value;
use sha2::{Digest, Sha256};

const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

async fn issuer() -> RunningIssuer {
    let users = vec![TestUser::new("sub-alice", "Alice")];
    fleet_oidc_issuer::spawn_on_loopback(IssuerConfig {
        users,
        ..IssuerConfig::default()
    })
    .await
    .unwrap()
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A code for sub-alice, issued against the challenge of `VERIFIER` (or none).
async fn code(i: &RunningIssuer, with_challenge: bool) -> Result<String, reqwest::StatusCode> {
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    let mut url = format!(
        "{}/authorize?response_type=code&client_id=fleet-console&redirect_uri=http://127.0.0.1:9/cb&scope=openid&state=s1&nonce=n1&login_hint=sub-alice",
        i.issuer_url
    );
    if with_challenge {
        url.push_str(&format!(
            "&code_challenge={challenge}&code_challenge_method=S256"
        ));
    }
    let r = http().get(url).send().await.unwrap();
    if !r.status().is_redirection() {
        return Err(r.status());
    }
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        to.starts_with("http://127.0.0.1:9/cb?code=") && to.ends_with("&state=s1"),
        "{to}"
    );
    Ok(to
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_owned())
}

async fn exchange(
    i: &RunningIssuer,
    code: &str,
    verifier: &str,
    secret: &str,
) -> (reqwest::StatusCode, Value) {
    let r = http()
        .post(format!("{}/token", i.issuer_url))
        .basic_auth("fleet-console", Some(secret))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", "http://127.0.0.1:9/cb"),
            ("code_verifier", verifier),
        ])
        .send()
        .await
        .unwrap();
    (r.status(), r.json().await.unwrap())
}

#[tokio::test]
async fn a_code_is_exchanged_once_with_the_right_verifier_and_secret_only() {
    let i = issuer().await;
    assert_eq!(
        code(&i, false).await,
        Err(reqwest::StatusCode::BAD_REQUEST),
        "no challenge, no code"
    );

    let c = code(&i, true).await.unwrap();
    let (status, body) = exchange(
        &i,
        &c,
        "another-verifier-of-at-least-forty-three-characters-xx",
        "console-test-secret",
    )
    .await;
    assert_eq!(
        (status.as_u16(), body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    // The code was spent by the failed attempt too.
    let (status, _) = exchange(&i, &c, VERIFIER, "console-test-secret").await;
    assert_eq!(status.as_u16(), 400);

    let c = code(&i, true).await.unwrap();
    let (status, body) = exchange(&i, &c, VERIFIER, "wrong-secret").await;
    assert_eq!(
        (status.as_u16(), body["error"].as_str()),
        (401, Some("invalid_client"))
    );

    let c = code(&i, true).await.unwrap();
    let (status, body) = exchange(&i, &c, VERIFIER, "console-test-secret").await;
    assert_eq!(status.as_u16(), 200);
    let id_token = body["id_token"].as_str().unwrap();
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(id_token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (
            claims["sub"].as_str(),
            claims["nonce"].as_str(),
            claims["aud"].as_str()
        ),
        (Some("sub-alice"), Some("n1"), Some("fleet-console"))
    );
    assert_eq!(claims["iss"].as_str(), Some(i.issuer_url.as_str()));
    let (status, _) = exchange(&i, &c, VERIFIER, "console-test-secret").await;
    assert_eq!(status.as_u16(), 400, "a code is used once");
}
