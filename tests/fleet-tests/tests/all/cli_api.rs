//! `fleetctl` as people run it: through fleet-api with a token of their own, never the
//! database. Every run here points DATABASE_URL and AMQP_URL at a port nothing listens on,
//! so a command that reached for either would fail. Shown, listed (filtered, paged),
//! waited for and approved; `-o json` is the API's own answer; another tenant's operation
//! is not found; a context file gives the URL, tenant and token; completion scripts and
//! `--help` list only what each command uses.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use std::time::Duration;

use fleet_core::Role;
use fleet_tests::{
    bare_fleetctl, eventually, hash_of, intent, op_of, ApiProcess, TestFleet, WorkerProcess,
    DEAD_DATABASE_URL,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "fleetctl failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&ok(out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)))
}

/// The API and execute as processes, an agent's and an approver's tokens, and three
/// payments submitted by the agent (newest last).
struct Desk {
    fleet: TestFleet,
    api: ApiProcess,
    _execute: WorkerProcess,
    alice: String,
    ops: Vec<(String, String)>,
}

async fn desk() -> Desk {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let execute = fleet.spawn_process("fleet-execute", &[]);
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let mut ops = Vec::new();
    for _ in 0..3 {
        let i = intent();
        api.submitted(&fleet.http, &agent, &i).await;
        ops.push((op_of(&i), hash_of(&i)));
    }
    Desk {
        fleet,
        api,
        _execute: execute,
        alice,
        ops,
    }
}

impl Desk {
    async fn alice(&self, args: &[&str]) -> Output {
        self.api.fleetctl_as(&self.alice, &[], args).await
    }

    async fn stop(self) {
        self.fleet.stop().await;
    }
}

#[tokio::test]
async fn an_approver_with_only_a_token_shows_lists_waits_for_and_approves() {
    let d = desk().await;
    let (op, hash) = d.ops[0].clone();

    // The hash to approve, from the API, with no database reachable.
    let shown = ok(&d.alice(&["show", &op]).await);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("hash") && l.ends_with(&hash)),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("amount") && l.ends_with("12,500.00 KZT")),
        "{shown}"
    );

    // Paged 2 + 1, newest first, with the cursor the first page handed out.
    let first = json_of(&d.alice(&["list", "--limit", "2", "-o", "json"]).await);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = json_of(
        &d.alice(&["list", "--limit", "2", "--cursor", &cursor, "-o", "json"])
            .await,
    );
    assert_eq!(second["next_cursor"], Value::Null);
    let ids: Vec<&str> = first["data"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["data"].as_array().unwrap())
        .map(|v| v["operation_id"].as_str().unwrap())
        .collect();
    let newest_first: Vec<&str> = d.ops.iter().rev().map(|(op, _)| op.as_str()).collect();
    assert_eq!(ids, newest_first);
    // The table says where the next page is, on stderr, and keeps stdout to the rows.
    let table = d.alice(&["list", "--limit", "2"]).await;
    assert_eq!(ok(&table).lines().count(), 3, "{}", text(&table.stdout));
    assert!(
        text(&table.stderr).contains(&format!("--cursor {cursor}")),
        "{}",
        text(&table.stderr)
    );

    // Waiting for the end while the approver approves: reached, exit 0, the final view.
    let waiter = d
        .api
        .person_fleetctl(
            &d.alice,
            &[],
            &[
                "wait",
                &op,
                "--for",
                "final",
                "--timeout",
                "60s",
                "-o",
                "json",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It is held by the API (a long-poll), not answered from a finished operation.
    eventually("the wait to be held by the API", || async {
        (d.api
            .gauge(&d.fleet.http, "fleet_api_waiting_requests")
            .await?
            >= 1.0)
            .then_some(())
    })
    .await;
    let approved = ok(&d.alice(&["approve", &op, "--hash", &hash]).await);
    assert!(approved.contains("approved"), "{approved}");
    let waited = waiter.wait_with_output().await.unwrap();
    assert_eq!(waited.status.code(), Some(0), "{}", text(&waited.stderr));
    assert_eq!(json_of(&waited)["status"], "succeeded");
    assert!(
        text(&waited.stderr).contains("reached final"),
        "{}",
        text(&waited.stderr)
    );

    // A wait that runs out says so, and exits 2.
    let (pending, _) = &d.ops[1];
    let timed_out = d
        .alice(&["wait", pending, "--for", "decision", "--timeout", "1s"])
        .await;
    assert_eq!(
        timed_out.status.code(),
        Some(2),
        "{}",
        text(&timed_out.stderr)
    );
    assert!(text(&timed_out.stderr).contains("timed out after 1s waiting for decision"));

    // The filters are the API's.
    let succeeded = json_of(
        &d.alice(&["list", "--status", "succeeded", "-o", "json"])
            .await,
    );
    let only: Vec<&Value> = succeeded["data"].as_array().unwrap().iter().collect();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0]["operation_id"], op.as_str());
    let pending_ones = json_of(
        &d.alice(&["list", "--approval-status", "pending", "--json"])
            .await,
    );
    assert_eq!(pending_ones["data"].as_array().unwrap().len(), 2);
    d.stop().await;
}

#[tokio::test]
async fn json_output_is_exactly_the_apis_view_and_page() {
    let d = desk().await;
    let (op, _) = &d.ops[0];
    let shown = json_of(&d.alice(&["show", op, "-o", "json"]).await);
    let (status, view) = d
        .api
        .get(&d.fleet.http, &d.alice, &format!("/v1/operations/{op}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown, view);
    let listed = json_of(&d.alice(&["list", "--limit", "2", "-o", "json"]).await);
    let (_, page) = d
        .api
        .get(&d.fleet.http, &d.alice, "/v1/operations?limit=2")
        .await;
    assert_eq!(listed, page);
    // No column of the table (fence, lease_owner) leaks in.
    assert!(shown.get("fence").is_none() && shown.get("lease_owner").is_none());
    d.stop().await;
}

#[tokio::test]
async fn another_tenants_operation_is_not_found_and_not_listed() {
    let d = desk().await;
    let (op, hash) = &d.ops[0];
    let mallory = d
        .fleet
        .token("mallory", Role::Approver, &[OTHER_TENANT])
        .await;
    let refused = d.api.fleetctl_as(&mallory, &[], &["show", op]).await;
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("404 not_found"), "{stderr}");
    assert!(
        !stderr.contains(&mallory),
        "the token is never printed: {stderr}"
    );
    let listed = json_of(
        &d.api
            .fleetctl_as(&mallory, &[], &["list", "-o", "json"])
            .await,
    );
    assert_eq!(listed["data"], json!([]));
    let approve = d
        .api
        .fleetctl_as(&mallory, &[], &["approve", op, "--hash", hash])
        .await;
    assert!(
        text(&approve.stderr).contains("404 not_found"),
        "{}",
        text(&approve.stderr)
    );

    // Alice's own scope narrowed to a tenant she was not granted: nothing there either.
    let elsewhere = [("FLEET_TENANT", OTHER_TENANT)];
    let hidden = d.api.fleetctl_as(&d.alice, &elsewhere, &["show", op]).await;
    assert!(
        text(&hidden.stderr).contains("404 not_found"),
        "{}",
        text(&hidden.stderr)
    );
    let none = json_of(
        &d.api
            .fleetctl_as(&d.alice, &elsewhere, &["list", "-o", "json"])
            .await,
    );
    assert_eq!(none["data"], json!([]));
    let hers = json_of(&d.alice(&["list", "--tenant", TENANT, "-o", "json"]).await);
    assert_eq!(hers["data"].as_array().unwrap().len(), 3);
    d.stop().await;
}

#[tokio::test]
async fn a_context_file_gives_the_url_tenant_and_token() {
    let d = desk().await;
    let (op, _) = &d.ops[0];
    let dir = std::env::temp_dir().join(format!("fleet-config-{}", d.fleet.name()));
    let config = dir.join("fleet").join("config.toml");
    let config_s = config.display().to_string();
    // Only the config file and the variable the context names: no FLEET_API_URL, no FLEET_TOKEN.
    let run = |args: &'static [&'static str], env: Vec<(&'static str, String)>| {
        let mut command = bare_fleetctl();
        command
            .env("DATABASE_URL", DEAD_DATABASE_URL)
            .env("FLEET_CONFIG", &config_s)
            .envs(env)
            .args(args);
        command
    };
    let added = run(&[], vec![])
        .args([
            "context",
            "add",
            "dev",
            "--api-url",
            &d.api.base_url,
            "--tenant",
            TENANT,
            "--token-env",
            "ALICE_TOKEN",
        ])
        .output()
        .await
        .unwrap();
    ok(&added);
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the config file is its owner's only");
    assert!(!std::fs::read_to_string(&config).unwrap().contains(&d.alice));
    ok(&run(&["context", "use", "dev"], vec![])
        .output()
        .await
        .unwrap());

    let with_token = vec![("ALICE_TOKEN", d.alice.clone())];
    let shown = ok(&run(&["show"], with_token.clone())
        .arg(op)
        .output()
        .await
        .unwrap());
    assert!(shown.contains(op.as_str()), "{shown}");
    let said = ok(&run(&["context", "show"], with_token.clone())
        .output()
        .await
        .unwrap());
    assert!(said.contains("(from context dev)"), "{said}");
    assert!(said.contains("ALICE_TOKEN (context dev)"), "{said}");
    assert!(!said.contains(&d.alice), "never the token: {said}");

    // The context's variable unset: the error names it.
    let unset = run(&["show"], vec![]).arg(op).output().await.unwrap();
    assert!(
        text(&unset.stderr).contains("ALICE_TOKEN, which is not set"),
        "{}",
        text(&unset.stderr)
    );
    // The environment overrides the context: here a URL where nothing listens.
    let mut elsewhere = with_token.clone();
    elsewhere.push(("FLEET_API_URL", "http://127.0.0.1:9".to_owned()));
    let overridden = run(&["show"], elsewhere).arg(op).output().await.unwrap();
    assert!(!overridden.status.success());
    assert!(
        text(&overridden.stderr).contains("calling the API at http://127.0.0.1:9"),
        "{}",
        text(&overridden.stderr)
    );

    // A token handed over on standard input is stored, the file still 0600, never listed.
    let mut stdin_add = run(&["context", "add", "stored", "--token-stdin"], vec![])
        .args(["--api-url", &d.api.base_url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = stdin_add.stdin.take().unwrap();
        stdin
            .write_all(format!("{}\n", d.alice).as_bytes())
            .await
            .unwrap();
    }
    ok(&stdin_add.wait_with_output().await.unwrap());
    assert_eq!(
        std::fs::metadata(&config).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let listed = ok(&run(&["context", "list"], vec![]).output().await.unwrap());
    assert!(
        listed.contains("stored in the config file") && !listed.contains(&d.alice),
        "{listed}"
    );
    let by_stored = run(&["show", "--context", "stored"], vec![])
        .arg(op)
        .output()
        .await
        .unwrap();
    assert!(ok(&by_stored).contains(op.as_str()));
    std::fs::remove_dir_all(&dir).unwrap();
    d.stop().await;
}

/// Runs `fleetctl` with nothing in its environment but PATH.
async fn bare(args: &[&str]) -> Output {
    bare_fleetctl()
        .args(args)
        .output()
        .await
        .expect("run fleetctl")
}

#[tokio::test]
async fn each_commands_help_lists_only_what_it_uses_and_completion_is_printed() {
    let approve = ok(&bare(&["approve", "--help"]).await);
    for absent in [
        "--database-url",
        "DATABASE_URL",
        "--amqp-url",
        "AMQP_NAMESPACE",
    ] {
        assert!(
            !approve.contains(absent),
            "{absent} in approve --help:\n{approve}"
        );
    }
    for present in [
        "--api-url",
        "FLEET_API_URL",
        "FLEET_TOKEN",
        "--context",
        "FLEET_CONFIG",
    ] {
        assert!(
            approve.contains(present),
            "{present} missing from approve --help:\n{approve}"
        );
    }
    let show = ok(&bare(&["show", "--help"]).await);
    assert!(!show.contains("DATABASE_URL"), "{show}");
    let migrate = ok(&bare(&["migrate", "--help"]).await);
    assert!(
        migrate.contains("--database-url") && migrate.contains("DATABASE_URL"),
        "{migrate}"
    );
    assert!(
        !migrate.contains("FLEET_TOKEN") && !migrate.contains("--amqp-url"),
        "{migrate}"
    );
    let token_create = ok(&bare(&["token", "create", "--help"]).await);
    assert!(token_create.contains("--database-url"), "{token_create}");
    let generate = ok(&bare(&["key", "generate", "--help"]).await);
    assert!(!generate.contains("--database-url"), "{generate}");

    let bash = ok(&bare(&["completion", "bash"]).await);
    assert!(bash.contains("complete -F _fleetctl"), "{bash}");
    for word in ["approve", "wait", "context", "--api-url"] {
        assert!(bash.contains(word), "{word} in the bash completion");
    }
    assert!(ok(&bare(&["completion", "zsh"]).await).contains("#compdef fleetctl"));
    assert!(ok(&bare(&["completion", "fish"]).await).contains("complete -c fleetctl"));
}

#[tokio::test]
async fn a_wait_for_an_escalated_operation_ends_with_status_3() {
    let d = desk().await;
    let (op, _) = &d.ops[2];
    // An operator's concern now (what reconcile does after repeated failed lookups).
    d.fleet
        .sql()
        .await
        .execute(
            "UPDATE operations SET escalated_at = now(), status_reason = 'lookup_failed_repeatedly' WHERE operation_id = $1",
            &[op],
        )
        .await
        .unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        d.alice(&["wait", op, "--for", "final", "--timeout", "20s"]),
    )
    .await
    .expect("an escalated operation ends the wait at once");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("escalated before reaching final"),
        "{}",
        text(&out.stderr)
    );
    d.stop().await;
}

/// The exit status of each kind of failure (docs/operations.md#exit-statuses), through the
/// real API: a script branches on it without reading the message, and an expected refusal
/// never prints a backtrace, even with `RUST_BACKTRACE=1`.
#[tokio::test]
async fn exit_statuses_tell_refused_not_found_conflict_unavailable_and_usage_apart() {
    let d = desk().await;
    let (op, hash) = d.ops[0].clone();
    let agent = d.fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let backtrace = [("RUST_BACKTRACE", "1")];
    let status = |out: &Output| (out.status.code(), text(&out.stderr));

    let missing = d
        .api
        .fleetctl_as(
            &d.alice,
            &backtrace,
            &["show", "op_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
        )
        .await;
    let (code, stderr) = status(&missing);
    assert_eq!(code, Some(5), "not found: {stderr}");
    assert!(stderr.contains("404"), "{stderr}");
    assert!(
        !stderr.to_lowercase().contains("backtrace"),
        "an expected refusal printed a backtrace: {stderr}"
    );

    let wrong_hash = "sha256:".to_owned() + &"0".repeat(64);
    let (code, stderr) = status(&d.alice(&["approve", &op, "--hash", &wrong_hash]).await);
    assert_eq!(code, Some(6), "conflict: {stderr}");

    // An agent may not decide: refused as it is, whatever is sent again.
    let (code, stderr) = status(
        &d.api
            .fleetctl_as(&agent, &[], &["approve", &op, "--hash", &hash])
            .await,
    );
    assert_eq!(code, Some(4), "refused: {stderr}");

    let unreachable = d
        .api
        .fleetctl_as(
            &d.alice,
            &[("FLEET_API_URL", "http://127.0.0.1:1")],
            &["show", &op],
        )
        .await;
    let (code, stderr) = status(&unreachable);
    assert_eq!(code, Some(7), "unavailable: {stderr}");

    let (code, stderr) = status(&d.alice(&["show"]).await);
    assert_eq!(code, Some(64), "usage: {stderr}");
    assert!(stderr.contains("Usage"), "{stderr}");
    let help = d.alice(&["show", "--help"]).await;
    assert_eq!(help.status.code(), Some(0), "--help is an answer");

    // The operation was neither approved nor touched by any of it.
    let view = json_of(&d.alice(&["show", &op, "-o", "json"]).await);
    assert_eq!(view["approval_status"], "pending", "{view}");
    d.stop().await;
}
