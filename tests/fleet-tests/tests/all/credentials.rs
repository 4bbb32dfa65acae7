//! Credentials with limits, through the real `fleetctl` and `fleet-api` processes: tokens
//! that expire (401 `token_expired` on the JSON routes and on `/mcp`), that record their
//! last use at most once a minute (with the API's database role granted exactly that),
//! and that act for only some of their principal's tenants; and a console sign-in that
//! refuses an ID token signed with a symmetric algorithm, and an issuer reached over plain
//! HTTP across a network.

use std::time::Duration;

use fleet_core::Role;
use fleet_oidc_issuer::{IdTokenSigning, IssuerConfig, TestUser};
use fleet_store::{role_url, DbRole};
use fleet_tests::{
    bin_dir, eventually, eventually_within, hash_of, intent, op_of, sign_in_over_http, ApiProcess,
    SignedIn, TestFleet,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_483";

async fn get(fleet: &TestFleet, api: &ApiProcess, token: &str, path: &str) -> reqwest::Response {
    api.get_response(&fleet.http, token, path).await
}

async fn submit(fleet: &TestFleet, api: &ApiProcess, token: &str, i: &Value) -> StatusCode {
    api.submit(&fleet.http, token, i).await.status()
}

async fn approve(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    i: &Value,
) -> (StatusCode, Value) {
    let path = format!("/v1/operations/{}/approve", op_of(i));
    let body = json!({"payload_hash": hash_of(i)});
    let response = api.post(&fleet.http, token, &path, &body).await;
    (response.status(), response.json().await.unwrap())
}

async fn error_of(response: reqwest::Response) -> (StatusCode, Option<String>) {
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    (status, body["error"]["code"].as_str().map(str::to_owned))
}

/// The operation ids `token` lists.
async fn listed(fleet: &TestFleet, api: &ApiProcess, token: &str) -> Vec<String> {
    let page: Value = get(fleet, api, token, "/v1/operations?limit=100")
        .await
        .json()
        .await
        .unwrap();
    let mut ids: Vec<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["operation_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

async fn token_list(fleet: &TestFleet) -> String {
    String::from_utf8(fleet.fleetctl(&["token", "list"]).await.stdout).unwrap()
}

fn for_tenant(tenant: &str) -> Value {
    let mut i = intent();
    i["tenant_id"] = json!(tenant);
    i
}

#[tokio::test]
async fn a_token_limited_to_one_tenant_acts_for_it_alone_while_its_principals_other_token_acts_for_both(
) {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    // Two principals of both tenants, each with a token for all of its tenants and one
    // limited to the first.
    let both = [TENANT, OTHER_TENANT];
    let agent = fleet.token_for("agent-a", "agent", &both).await;
    let agent_limited = fleet.token_for("agent-a", "agent", &[TENANT]).await;
    let alice = fleet.token_for("alice", "approver", &both).await;
    let alice_limited = fleet.token_for("alice", "approver", &[TENANT]).await;
    // Without --tenant, a token acts for every tenant of its principal.
    let agent_all = fleet.token_for("agent-a", "agent", &[]).await;

    // Submitting: the limited token only for its tenant; nothing written for the other.
    let (mine, theirs) = (for_tenant(TENANT), for_tenant(OTHER_TENANT));
    assert_eq!(
        submit(&fleet, &api, &agent_limited, &mine).await,
        StatusCode::ACCEPTED
    );
    let refused = for_tenant(OTHER_TENANT);
    let response = api.submit(&fleet.http, &agent_limited, &refused).await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::FORBIDDEN, Some("tenant_not_granted".to_owned()))
    );
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT count(*) FROM operations WHERE operation_id = '{}'",
                op_of(&refused)
            ))
            .await,
        0
    );
    assert_eq!(
        submit(&fleet, &api, &agent, &theirs).await,
        StatusCode::ACCEPTED
    );

    // Reading and listing: the other tenant's operation is not found and not listed.
    let (status, code) = error_of(
        get(
            &fleet,
            &api,
            &agent_limited,
            &format!("/v1/operations/{}", op_of(&theirs)),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, code.as_deref()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    assert_eq!(
        listed(&fleet, &api, &agent_limited).await,
        vec![op_of(&mine)]
    );
    for unlimited in [&agent, &agent_all] {
        assert_eq!(
            listed(&fleet, &api, unlimited).await,
            sorted(vec![op_of(&mine), op_of(&theirs)])
        );
    }

    // Approving: the limited approver's token is answered as for a missing operation on
    // the other tenant's, and nothing is recorded; her other token approves both.
    let (status, body) = approve(&fleet, &api, &alice_limited, &theirs).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    assert_eq!(fleet.count("SELECT count(*) FROM approvals").await, 0);
    let (status, view) = approve(&fleet, &api, &alice_limited, &mine).await;
    assert_eq!(
        (status, view["approval_status"].as_str()),
        (StatusCode::OK, Some("approved"))
    );
    let (status, view) = approve(&fleet, &api, &alice, &theirs).await;
    assert_eq!(
        (status, view["approval_status"].as_str()),
        (StatusCode::OK, Some("approved"))
    );

    // A limit the principal does not have is refused, with what is missing, and writes
    // nothing; so is a new principal with no tenant at all.
    let tokens_before = fleet.count("SELECT count(*) FROM api_tokens").await;
    let refused = fleet
        .token_create(&[
            "--principal",
            "agent-a",
            "--role",
            "agent",
            "--tenant",
            TENANT,
            "--tenant",
            "org_999",
        ])
        .await
        .unwrap_err();
    assert!(
        refused.contains("agent-a does not act for org_999") && refused.contains("principal add"),
        "{refused}"
    );
    let refused = fleet
        .token_create(&["--principal", "newcomer", "--role", "agent"])
        .await
        .unwrap_err();
    assert!(
        refused.contains("name its tenants with --tenant"),
        "{refused}"
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM api_tokens").await,
        tokens_before
    );
    assert_eq!(
        fleet
            .count("SELECT count(*) FROM principal_tenants WHERE tenant_id = 'org_999' OR principal = 'newcomer'")
            .await,
        0
    );

    // The listing says which tokens are limited, and to what.
    let list = token_list(&fleet).await;
    let limited_rows = list
        .lines()
        .filter(|l| l.ends_with(&format!(" {TENANT} (limited)")))
        .count();
    assert_eq!(limited_rows, 2, "{list}");
    let all_rows = list
        .lines()
        .filter(|l| l.contains("agent-a") && l.ends_with(&format!(" {TENANT},{OTHER_TENANT}")))
        .count();
    assert_eq!(all_rows, 1, "the token made without --tenant: {list}");
    fleet.stop().await;
}

#[tokio::test]
async fn an_expired_token_is_refused_with_token_expired_on_the_json_routes_and_on_mcp() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let args = |expires_in: &'static str| {
        vec![
            "--principal",
            "billing-bot",
            "--role",
            "agent",
            "--tenant",
            TENANT,
            "--expires-in",
            expires_in,
        ]
    };
    // Lifetimes that are not one are refused before anything is written.
    for bad in ["0d", "366d", "12", "1w", "1.5h"] {
        let refused = fleet.token_create(&args(bad)).await.unwrap_err();
        assert!(refused.contains("not a token lifetime"), "{bad}: {refused}");
    }
    assert_eq!(fleet.count("SELECT count(*) FROM api_tokens").await, 0);
    // Unless told, a token lives 90 days.
    fleet.token_for("billing-bot", "agent", &[TENANT]).await;
    assert_eq!(
        fleet
            .count("SELECT count(*) FROM api_tokens WHERE expires_at - created_at = interval '90 days'")
            .await,
        1
    );

    let token = fleet.token_create(&args("3s")).await.unwrap();
    assert_eq!(
        get(&fleet, &api, &token, "/v1/operations").await.status(),
        StatusCode::OK,
        "accepted until it expires"
    );
    let refused = eventually_within(Duration::from_secs(10), "the token to expire", || async {
        let response = get(&fleet, &api, &token, "/v1/operations").await;
        (response.status() == StatusCode::UNAUTHORIZED).then_some(response)
    })
    .await;
    assert_eq!(
        refused.headers()["www-authenticate"],
        "Bearer error=\"invalid_token\", error_description=\"the token expired\""
    );
    assert_eq!(
        error_of(refused).await,
        (StatusCode::UNAUTHORIZED, Some("token_expired".to_owned()))
    );
    // Every door refuses it alike, and writes nothing.
    let i = intent();
    let response = api.submit(&fleet.http, &token, &i).await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::UNAUTHORIZED, Some("token_expired".to_owned()))
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "0"}}});
    let response = fleet
        .http
        .post(api.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(&token)
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(response).await,
        (StatusCode::UNAUTHORIZED, Some("token_expired".to_owned()))
    );
    // A token nobody issued is still just `unauthorized`.
    let unissued = format!("fleet_{}", "0".repeat(64));
    assert_eq!(
        error_of(get(&fleet, &api, &unissued, "/v1/operations").await).await,
        (StatusCode::UNAUTHORIZED, Some("unauthorized".to_owned()))
    );
    let list = token_list(&fleet).await;
    assert_eq!(
        list.lines().filter(|l| l.contains(" expired ")).count(),
        1,
        "{list}"
    );
    api.never_logged(&token);
    fleet.stop().await;
}

#[tokio::test]
async fn a_token_records_its_last_use_at_most_once_a_minute() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let db = fleet.sql().await;
    // The row's version (xmin) changes with every write of it, even one of the same value.
    let row = || async {
        let r = db
            .query_one("SELECT xmin::text, last_used_at FROM api_tokens", &[])
            .await
            .unwrap();
        (
            r.get::<_, String>(0),
            r.get::<_, Option<chrono::DateTime<chrono::Utc>>>(1),
        )
    };
    assert_eq!(row().await.1, None);
    assert!(token_list(&fleet).await.contains(" never "));

    // The first use is recorded by the time it is answered (fleet-api runs as its own
    // database role: the grant on that column is what lets it).
    assert_eq!(
        get(&fleet, &api, &token, "/v1/operations").await.status(),
        StatusCode::OK
    );
    let (version, first) = row().await;
    let first = first.expect("the first use is recorded");

    // Many more within the minute, some at once: not one more write.
    for _ in 0..5 {
        let burst = (0..8).map(|_| get(&fleet, &api, &token, "/v1/operations"));
        for response in futures_util::future::join_all(burst).await {
            assert_eq!(response.status(), StatusCode::OK);
        }
    }
    assert_eq!(row().await, (version.clone(), Some(first)));

    // A minute later (the recorded use moved back instead of waiting) the next use is
    // recorded again.
    db.execute(
        "UPDATE api_tokens SET last_used_at = last_used_at - interval '61 seconds'",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        get(&fleet, &api, &token, "/v1/operations").await.status(),
        StatusCode::OK
    );
    let (_, again) = row().await;
    assert!(again.expect("recorded") >= first, "{again:?} after {first}");
    let list = token_list(&fleet).await;
    assert!(
        list.contains(&again.unwrap().format("%Y-%m-%d %H:%M").to_string())
            && !list.contains(" never "),
        "{list}"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn the_api_role_may_record_a_tokens_use_and_change_nothing_else_of_it() {
    let fleet = TestFleet::start().await;
    fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let url = role_url(
        &fleet.database_url,
        DbRole::Api,
        DbRole::Api.password_from_env().as_deref(),
    )
    .unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let attempt = |sql: &'static str| {
        let client = &client;
        async move {
            match client.execute(sql, &[]).await {
                Ok(n) => format!("ok {n}"),
                Err(e) => e
                    .code()
                    .map_or_else(|| e.to_string(), |c| c.code().to_owned()),
            }
        }
    };
    assert_eq!(
        attempt("UPDATE api_tokens SET last_used_at = now()").await,
        "ok 1"
    );
    for forbidden in [
        "UPDATE api_tokens SET expires_at = now() + interval '10 years'",
        "UPDATE api_tokens SET tenants = NULL",
        "UPDATE api_tokens SET revoked_at = NULL",
        "UPDATE api_tokens SET principal = 'alice'",
        "DELETE FROM api_tokens",
        "INSERT INTO api_tokens (token_id, principal, token_hash, display_prefix, expires_at) VALUES ('t', 'billing-bot', 'sha256:' || repeat('0', 64), 'fleet_00000000', now() + interval '1 day')",
    ] {
        assert_eq!(attempt(forbidden).await, "42501", "{forbidden}");
    }
    fleet.stop().await;
}

#[tokio::test]
async fn an_id_token_signed_hs256_with_the_client_secret_is_refused_though_the_issuer_advertises_it(
) {
    let fleet = TestFleet::start().await;
    let issuer = fleet_oidc_issuer::spawn_on_loopback(IssuerConfig {
        users: vec![TestUser::new("sub-alice", "Alice")],
        id_token_signing: IdTokenSigning::Hs256WithClientSecret,
        ..IssuerConfig::default()
    })
    .await
    .unwrap();
    let discovery = fleet
        .get_json(&format!(
            "{}/.well-known/openid-configuration",
            issuer.issuer_url
        ))
        .await;
    assert_eq!(
        discovery["id_token_signing_alg_values_supported"],
        json!(["HS256"])
    );
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;
    // The default list, RS256 and ES256; a console told to accept HS256 does not start
    // (below).
    let api = fleet.spawn_console(&issuer).await;
    match sign_in_over_http(&api, "sub-alice").await {
        SignedIn::Refused(status, page) => {
            assert_eq!(status, StatusCode::BAD_REQUEST);
            assert!(page.contains("could not be verified"), "{page}");
        }
        SignedIn::Session(_) => panic!("signed in with an HS256 ID token"),
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM console_sessions").await,
        0
    );
    // Refused for its algorithm, not for anything else about it.
    let log = eventually("the refusal logged", || async {
        let log = api.process.log_text();
        log.contains("console sign-in refused").then_some(log)
    })
    .await;
    assert!(log.contains("algorithm `HS256` is not one of"), "{log}");
    fleet.stop().await;
}

/// Runs fleet-api with `env` (and this fleet's database and broker) and returns its exit
/// status and what it printed, when it refuses to start.
async fn refused_start(fleet: &TestFleet, env: &[(&str, &str)]) -> (i32, String) {
    let run = tokio::process::Command::new(bin_dir().join("fleet-api"))
        .env_clear()
        .env("DATABASE_URL", &fleet.database_url)
        .env("AMQP_URL", &fleet.broker.amqp_url)
        .env("AMQP_NAMESPACE", &fleet.broker.namespace)
        .env("API_ADDR", "127.0.0.1:0")
        .env("ADMIN_ADDR", "127.0.0.1:0")
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("fleet-api refuses at once instead of starting")
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn fleet_api_refuses_to_start_with_a_plain_http_issuer_off_the_loopback_or_an_hmac_id_token_algorithm(
) {
    let fleet = TestFleet::start().await;
    let (code, stderr) =
        refused_start(&fleet, &[("OIDC_ISSUER_URL", "http://id.example.com")]).await;
    assert_ne!(code, 0);
    assert!(
        stderr.contains("OIDC_ISSUER_URL must be an https URL"),
        "{stderr}"
    );
    let (code, stderr) = refused_start(
        &fleet,
        &[
            ("OIDC_ISSUER_URL", "https://id.example.com"),
            ("OIDC_ID_TOKEN_ALGS", "RS256,HS256"),
        ],
    )
    .await;
    assert_ne!(code, 0);
    assert!(
        stderr.contains("OIDC_ID_TOKEN_ALGS") && stderr.contains("HS256 is symmetric"),
        "{stderr}"
    );
    fleet.stop().await;
}
