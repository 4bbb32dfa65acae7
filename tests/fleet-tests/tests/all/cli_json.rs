//! `fleetctl -o json` on every command that prints a result, run as a real process: stdout
//! is one JSON document and nothing else (notes go to stderr), with the keys docs/operations.md
//! documents. The operator's commands against the test's own database and broker namespace;
//! people's decisions through a real fleet-api, where the JSON is the API's own answer.

use std::process::Output;

use fleet_core::{Role, Status};
use fleet_tests::{
    bare_fleetctl, hash_of, intent, op_of, principal_add, ApiProcess, TestFleet, DEAD_DATABASE_URL,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// stdout as the one JSON document it must be: a single line that parses whole.
fn document(what: &str, out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().count(),
        1,
        "{what}: one line on stdout:\n{stdout}"
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {stdout}"))
}

/// `value` has every one of `keys` (null allowed: the key is the contract).
fn has_keys(what: &str, value: &Value, keys: &[&str]) {
    for key in keys {
        assert!(value.get(*key).is_some(), "{what}: no {key:?} in {value}");
    }
}

/// fleetctl as the operator runs it: the test's database and broker namespace.
async fn operator(fleet: &TestFleet, args: &[&str]) -> Output {
    bare_fleetctl()
        .env("DATABASE_URL", &fleet.database_url)
        .env("AMQP_NAMESPACE", &fleet.broker.namespace)
        .env("FLEET_ADMIN", "root")
        .env("FLEET_ADMIN_KEY_FILE", fleet.test_registrar_file().await)
        .args(args)
        .output()
        .await
        .expect("run fleetctl")
}

/// `fleetctl policy <verb> [<version>]` for the tenant's `payment.create`, printing JSON.
fn policy_of_payments<'a>(verb: &'a str, version: Option<&'a str>) -> Vec<&'a str> {
    let mut args = vec!["policy", verb];
    args.extend(version);
    args.extend([
        "--action",
        "payment.create",
        "--tenant",
        TENANT,
        "-o",
        "json",
    ]);
    args
}

/// A person's command through `api` as the bearer of `token`, with `env` on top: the one
/// JSON document it printed.
async fn person(api: &ApiProcess, token: &str, env: &[(&str, &str)], args: &[&str]) -> Value {
    document(&args.join(" "), &api.fleetctl_as(token, env, args).await)
}

/// A person's decision on `op` with `args` prints the operation's view as the API shows it
/// after, at `status`.
async fn decides(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    op: &str,
    args: &[&str],
    status: &str,
) {
    let printed = person(api, token, &[], args).await;
    let (code, view) = api
        .get(&fleet.http, token, &format!("/v1/operations/{op}"))
        .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(printed, view);
    assert_eq!(printed["status"], status);
}

#[tokio::test]
async fn the_operators_commands_print_one_json_document_with_their_keys() {
    let fleet = TestFleet::start().await;
    let dir = std::env::temp_dir().join(format!("fleet-cli-json-{}", fleet.name()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: Vec<String>| {
        let fleet = &fleet;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let what = args.join(" ");
            document(&what, &operator(fleet, &args).await)
        }
    };
    let s = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();

    // -o json before the command, --json after it: both global.
    let migrated = run(s(&["-o", "json", "migrate"])).await;
    has_keys(
        "migrate",
        &migrated,
        &["database", "roles", "passwords_set"],
    );
    assert!(migrated["roles"]["api"].is_string(), "{migrated}");

    let i = intent();
    let file = dir.join("intent.json");
    std::fs::write(&file, serde_json::to_vec(&i).unwrap()).unwrap();
    let file = file.display().to_string();
    let hashed = run(s(&["hash", &file, "--json"])).await;
    assert_eq!(
        hashed,
        json!({"operation_id": op_of(&i), "payload_hash": hash_of(&i)})
    );
    let submitted = run(s(&["submit", &file, "-o", "json"])).await;
    assert_eq!(submitted, hashed);
    let mut correction = intent();
    correction["supersedes"] = json!(op_of(&i));
    let corrected = dir.join("correction.json");
    std::fs::write(&corrected, serde_json::to_vec(&correction).unwrap()).unwrap();
    let superseding = run(s(&[
        "supersede",
        &op_of(&i),
        "--file",
        &corrected.display().to_string(),
        "-o",
        "json",
    ]))
    .await;
    assert_eq!(superseding["supersedes"], json!(op_of(&i)));
    assert_eq!(superseding["operation_id"], json!(op_of(&correction)));

    let added = run(s(&principal_add(
        "bob",
        "approver",
        TENANT,
        &["-o", "json"],
    )))
    .await;
    assert_eq!(
        added,
        json!({"name": "bob", "role": "approver", "created": true, "tenants": [TENANT], "broker_user": null})
    );
    let principals = run(s(&["principal", "list", "-o", "json"])).await;
    let bob = principals["principals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "bob")
        .cloned()
        .expect("bob listed");
    has_keys(
        "principal list",
        &bob,
        &[
            "role",
            "oidc_subject",
            "broker_user",
            "active_tokens",
            "removed_at",
            "tenants",
        ],
    );

    let created = run(s(&[
        "token",
        "create",
        "--principal",
        "bob",
        "--role",
        "approver",
        "-o",
        "json",
    ]))
    .await;
    has_keys(
        "token create",
        &created,
        &[
            "token",
            "token_id",
            "principal",
            "role",
            "tenants",
            "limited",
            "expires_at",
        ],
    );
    let token_id = created["token_id"].as_str().unwrap().to_owned();
    let tokens = run(s(&["token", "list", "-o", "json"])).await;
    let listed = tokens["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["token_id"] == token_id.as_str())
        .cloned()
        .expect("the token listed");
    assert_eq!(listed["state"], "active");
    assert!(
        !tokens
            .to_string()
            .contains(created["token"].as_str().unwrap()),
        "a listing never holds a token"
    );
    let revoked = run(s(&["token", "revoke", &token_id, "-o", "json"])).await;
    assert_eq!(revoked["revoked"], true);
    assert_eq!(revoked["already_revoked"], false);

    let key = dir.join("bob.key").display().to_string();
    let generated = run(s(&["key", "generate", "--out", &key, "-o", "json"])).await;
    has_keys(
        "key generate",
        &generated,
        &[
            "key_id",
            "public_key",
            "private_key_file",
            "public_key_file",
        ],
    );
    let key_id = generated["key_id"].as_str().unwrap().to_owned();
    let registered = run(s(&[
        "key",
        "add",
        "--principal",
        "bob",
        "--public-key",
        &format!("{key}.pub"),
        "-o",
        "json",
    ]))
    .await;
    assert_eq!(registered, json!({"key_id": key_id, "principal": "bob"}));
    let keys = run(s(&["key", "list", "-o", "json"])).await;
    assert!(
        keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["key_id"] == key_id.as_str()),
        "{keys}"
    );
    let requests = run(s(&["key", "requests", "-o", "json"])).await;
    assert!(requests["requests"].is_array(), "{requests}");
    let removed = run(s(&["key", "remove", &key_id, "-o", "json"])).await;
    assert_eq!(
        removed,
        json!({"key_id": key_id, "principal": "bob", "already_removed": false})
    );

    let assigned = run(s(&policy_of_payments("assign", Some("payments-v3")))).await;
    has_keys(
        "policy assign",
        &assigned,
        &["action", "tenant_id", "policy_version", "previous"],
    );
    let policies = run(s(&["policy", "list", "-o", "json"])).await;
    assert!(
        policies["policies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["tenant_id"] == TENANT && p["policy_version"] == "payments-v3"),
        "{policies}"
    );
    let unassigned = run(s(&policy_of_payments("unassign", None))).await;
    assert_eq!(
        unassigned,
        json!({"action": "payment.create", "tenant_id": TENANT, "unassigned": true})
    );

    let pruned = run(s(&["prune", "-o", "json"])).await;
    for table in ["outbox", "webhook_events"] {
        has_keys(
            "prune",
            &pruned[table],
            &["older_than_s", "rows", "batches", "seconds"],
        );
    }

    let stored = fleet.stored_with_quorum(&intent(), 1, None).await;
    let rung = run(s(&["reconcile", &stored, "-o", "json"])).await;
    assert_eq!(
        rung,
        json!({"operation_id": stored, "tenant_id": TENANT, "rung": true})
    );

    let gone = run(s(&["principal", "remove", "bob", "-o", "json"])).await;
    has_keys(
        "principal remove",
        &gone,
        &[
            "name",
            "already_removed",
            "tokens_revoked",
            "sessions_ended",
            "keys_revoked",
            "approvals_voided",
            "broker_user_deleted",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    fleet.stop().await;
}

#[tokio::test]
async fn peoples_decisions_print_the_apis_answer_as_json() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let dana = fleet.token("dana", Role::Operator, &[TENANT]).await;
    let mut ops = Vec::new();
    for _ in 0..3 {
        let i = intent();
        api.submitted(&fleet.http, &agent, &i).await;
        ops.push((op_of(&i), hash_of(&i)));
    }

    // Approved, and made unknown by the provider answering 500 after committing it.
    fleet
        .sim_fault(
            json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
        )
        .await;
    let (op, hash) = &ops[0];
    let approved = person(
        &api,
        &alice,
        &[],
        &["approve", op, "--hash", hash, "-o", "json"],
    )
    .await;
    assert_eq!(approved["operation_id"], op.as_str());
    assert_eq!(approved["approval_status"], "approved");
    has_keys(
        "approve",
        &approved,
        &["status", "payload_hash", "approvals_received"],
    );
    fleet.reaches(op, Status::Unknown).await;
    let resolve = [
        "resolve",
        op,
        "--outcome",
        "failed",
        "--evidence",
        "not in the provider's records",
        "--json",
    ];
    decides(&fleet, &api, &dana, op, &resolve, "failed").await;

    let (op, _) = &ops[1];
    let reject = ["-o", "json", "reject", op, "--reason", "not ours"];
    decides(&fleet, &api, &alice, op, &reject, "cancelled").await;

    let (op, _) = &ops[2];
    let dispute = ["dispute", op, "--reason", "looks off", "-o", "json"];
    decides(&fleet, &api, &dana, op, &dispute, "disputed").await;

    let mandates = person(&api, &alice, &[], &["mandate", "list", "-o", "json"]).await;
    assert!(mandates["mandates"].is_array(), "{mandates}");

    // The context commands: what the target is, and the contexts of a config file.
    let config = std::env::temp_dir()
        .join(format!("fleet-cli-json-{}", fleet.name()))
        .join("config.toml");
    let config_s = config.display().to_string();
    let shown = person(
        &api,
        &alice,
        &[("FLEET_CONFIG", &config_s)],
        &["context", "show", "-o", "json"],
    )
    .await;
    has_keys(
        "context show",
        &shown,
        &[
            "context",
            "api_url",
            "api_url_from",
            "tenant",
            "tenant_from",
            "token",
        ],
    );
    assert!(
        !shown.to_string().contains(&alice),
        "the token itself is never shown: {shown}"
    );
    let contexts = document(
        "context list",
        &bare_fleetctl()
            .env("DATABASE_URL", DEAD_DATABASE_URL)
            .env("FLEET_CONFIG", &config_s)
            .args(["context", "list", "-o", "json"])
            .output()
            .await
            .unwrap(),
    );
    assert_eq!(contexts, json!({"current": null, "contexts": []}));
    let _ = std::fs::remove_dir_all(config.parent().unwrap());
    fleet.stop().await;
}
