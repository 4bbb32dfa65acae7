//! The console under test: the test OpenID Connect issuer in-process, fleet-api as a real
//! process configured to sign people in with it, principals with subjects, and a person
//! signing in over plain HTTP (cookies carried by hand, redirects followed one by one).

use fleet_core::Role;
use fleet_oidc_issuer::{IssuerConfig, RunningIssuer, TestUser};
use fleet_store::{NewPrincipal, PrincipalAdded};
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use crate::{free_port, ApiProcess, TestFleet, TENANT};

/// The test users: (subject, name shown by the issuer).
pub const TEST_USERS: &[(&str, &str)] = &[
    ("sub-alice", "Alice"),
    ("sub-bob", "Bob"),
    ("sub-dana", "Dana"),
    ("sub-agent", "The billing agent"),
    ("sub-stranger", "Nobody we know"),
    ("sub-erin", "Erin"),
];

/// The claims the issuer adds for Erin, whose role and tenants a console configured with
/// [`CLAIMED_ROLE`] and [`CLAIMED_TENANTS`] takes from her ID token.
pub const CLAIMED_ROLE: &str = "fleet_role";
pub const CLAIMED_TENANTS: &str = "fleet_tenants";

impl TestFleet {
    /// A test issuer on a free port of this machine, named `localhost` in its URL.
    pub async fn spawn_issuer(&self) -> RunningIssuer {
        let users = TEST_USERS
            .iter()
            .map(|(s, n)| match *s {
                "sub-erin" => TestUser::new(s, n).with_claims(serde_json::json!({
                    CLAIMED_ROLE: "approver",
                    CLAIMED_TENANTS: ["org_482"],
                })),
                _ => TestUser::new(s, n),
            })
            .collect();
        fleet_oidc_issuer::spawn_on_loopback(IssuerConfig {
            users,
            ..IssuerConfig::default()
        })
        .await
        .expect("issuer")
    }

    /// fleet-api with its console signing people in with `issuer`.
    pub async fn spawn_console(&self, issuer: &RunningIssuer) -> ApiProcess {
        self.spawn_console_with(issuer, &[]).await
    }

    /// [`TestFleet::spawn_console`] with `env` on top.
    pub async fn spawn_console_with(
        &self,
        issuer: &RunningIssuer,
        env: &[(&str, &str)],
    ) -> ApiProcess {
        let mut all = vec![
            ("OIDC_ISSUER_URL", issuer.issuer_url.as_str()),
            ("OIDC_CLIENT_ID", issuer.client_id.as_str()),
            ("OIDC_CLIENT_SECRET", issuer.client_secret.as_str()),
        ];
        all.extend_from_slice(env);
        self.spawn_api(&all).await
    }

    /// The console served as `http://localhost:<port>` (fleet-api and its URL): passkeys
    /// are scoped to a domain name, which `localhost` is and `127.0.0.1` is not.
    pub async fn spawn_console_on_localhost(&self, issuer: &RunningIssuer) -> (ApiProcess, String) {
        let port = free_port();
        let console_url = format!("http://localhost:{port}");
        let addr = format!("127.0.0.1:{port}");
        let api = self
            .spawn_console_with(
                issuer,
                &[("API_ADDR", &addr), ("API_PUBLIC_URL", &console_url)],
            )
            .await;
        (api, console_url)
    }

    /// The console (its issuer, kept while it runs, and fleet-api serving it), the token of
    /// the agent billing-bot, and `people` of [`TENANT`], each with their role, who sign in
    /// as `sub-<name>`.
    pub async fn console_for(
        &self,
        people: &[(&str, Role)],
    ) -> (RunningIssuer, ApiProcess, String) {
        let issuer = self.spawn_issuer().await;
        let api = self.spawn_console(&issuer).await;
        let agent = self.token("billing-bot", Role::Agent, &[TENANT]).await;
        for (name, role) in people {
            self.person(name, *role, &[TENANT], &format!("sub-{name}"))
                .await;
        }
        (issuer, api, agent)
    }

    /// A principal who signs in as `subject`.
    pub async fn person(&self, name: &str, role: Role, tenants: &[&str], subject: &str) {
        let tenants: Vec<String> = tenants.iter().map(|t| t.to_string()).collect();
        let p = NewPrincipal {
            name,
            role,
            tenants: &tenants,
            oidc_subject: Some(subject),
        };
        let added = self.store.add_principal(&p).await.expect("add a principal");
        assert!(
            matches!(
                added,
                PrincipalAdded::Added { .. } | PrincipalAdded::Updated { .. }
            ),
            "{added:?}"
        );
    }
}

/// An HTTP client that follows no redirect, so every hop and cookie can be checked.
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `name=value` of the `Set-Cookie` named `name`, with its attributes.
pub fn set_cookie<'a>(r: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    r.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
}

/// The value part of a `Set-Cookie` line.
pub fn cookie_value(set_cookie: &str) -> String {
    set_cookie
        .split(';')
        .next()
        .unwrap()
        .split_once('=')
        .unwrap()
        .1
        .to_owned()
}

fn location(r: &reqwest::Response) -> String {
    r.headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .expect("a redirect")
        .to_owned()
}

/// What a sign-in over HTTP gave: the session cookie's value, or the callback's answer.
pub enum SignedIn {
    Session(String),
    Refused(reqwest::StatusCode, String),
}

/// Signs `subject` in to the console at `api` over HTTP: start, the issuer (signing in at
/// once with `login_hint`), the callback with the sign-in cookie.
pub async fn sign_in_over_http(api: &ApiProcess, subject: &str) -> SignedIn {
    let http = no_redirects();
    let start = http
        .get(api.url("/console/login/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        start.status(),
        reqwest::StatusCode::SEE_OTHER,
        "start redirects to the issuer"
    );
    let sign_in_cookie =
        cookie_value(set_cookie(&start, "fleet_console_sign_in").expect("the sign-in cookie"));
    let at_issuer = http
        .get(format!("{}&login_hint={subject}", location(&start)))
        .send()
        .await
        .unwrap();
    assert!(
        at_issuer.status().is_redirection(),
        "the issuer signs {subject} in: {}",
        at_issuer.status()
    );
    let callback = http
        .get(location(&at_issuer))
        .header(COOKIE, format!("fleet_console_sign_in={sign_in_cookie}"))
        .send()
        .await
        .unwrap();
    match set_cookie(&callback, "fleet_console").map(cookie_value) {
        Some(session) if callback.status().is_success() && !session.is_empty() => {
            SignedIn::Session(session)
        }
        _ => {
            let status = callback.status();
            SignedIn::Refused(status, callback.text().await.unwrap())
        }
    }
}

/// The session cookie of `subject`, who must be allowed in.
pub async fn session_of(api: &ApiProcess, subject: &str) -> String {
    match sign_in_over_http(api, subject).await {
        SignedIn::Session(s) => s,
        SignedIn::Refused(status, body) => panic!("{subject} was refused ({status}): {body}"),
    }
}

/// `GET path` of the console as the holder of `session`, redirects not followed.
pub async fn console_get(api: &ApiProcess, session: &str, path: &str) -> reqwest::Response {
    no_redirects()
        .get(api.url(path))
        .header(COOKIE, format!("fleet_console={session}"))
        .send()
        .await
        .unwrap()
}

/// `POST path` of the console with the form `form` as the holder of `session`,
/// redirects not followed.
pub async fn console_post(
    api: &ApiProcess,
    session: &str,
    path: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    no_redirects()
        .post(api.url(path))
        .header(COOKIE, format!("fleet_console={session}"))
        .form(form)
        .send()
        .await
        .unwrap()
}

/// The value of the hidden `form_token` input of a console page.
pub fn form_token(page: &str) -> String {
    let at = page
        .find("name=\"form_token\" value=\"")
        .expect("a form token on the page")
        + 25;
    page[at..at + 64].to_owned()
}
