//! Evidence bundles through the real fleet: `fleet-api` and `fleet-execute` as processes,
//! the provider simulator over HTTP, `fleetctl` as a person runs it. A 1,500,000.00 KZT
//! payment signed by two approvers (one over the v3 statement, one over v4) is paid; its
//! bundle (`fleetctl evidence`) verifies with `fleetctl verify` and with the Python client's
//! verifier installed in a fresh venv and run with no network at all (`unshare -n`: a
//! network namespace of its own, with no interface up, so any socket it opened would fail);
//! a changed snapshot, approval signature, policy or provider object id fails both, naming
//! the part; after one approver's key is removed, a new bundle still verifies (the key was
//! valid when used). `GET /v1/evidence-keys` publishes the current key and an earlier one.
//! Without `EVIDENCE_KEY_FILE` the route answers 503 `evidence_key_not_configured`; a key
//! file its group may read stops the API's start, naming the setting.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use chrono::Utc;
use fleet_core::approval_statement::{format_expiry, STATEMENT_V3};
use fleet_core::{Action, ApprovalStatement, ApproverKey, Role, StatementSubject, Status};
use fleet_tests::{hash_of, intent, op_of, signed_approval, with_amount, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

/// A directory of the test's own, removed on every path.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir = std::env::temp_dir().join(format!("fleet-evidence-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The deployment's evidence key in `scratch` (mode 0600, as `fleetctl key generate`
/// writes it), and a directory holding an earlier key's public key.
fn evidence_keys(scratch: &Scratch) -> (ApproverKey, ApproverKey) {
    let current = fleetctl::key::new_key().unwrap();
    fleetctl::key::write_private(&scratch.path("evidence.key"), &current).unwrap();
    std::fs::write(
        scratch.path("evidence.key.pub"),
        format!("{}\n", current.public_key().to_text()),
    )
    .unwrap();
    let earlier = fleetctl::key::new_key().unwrap();
    std::fs::create_dir(scratch.path("earlier")).unwrap();
    std::fs::write(
        scratch.path("earlier/2025.pub"),
        format!("{}\n", earlier.public_key().to_text()),
    )
    .unwrap();
    (current, earlier)
}

/// Alice's approve body signed over the v3 statement (as a signer before v4 made it).
fn signed_v3(i: &Value, view: &Value, key: &ApproverKey) -> Value {
    let (op, hash) = (op_of(i), hash_of(i));
    let subject = StatementSubject {
        operation_id: &op,
        tenant_id: TENANT,
        action: Action::parse("payment.create").unwrap(),
        target: None,
        payload: &i["payload"],
        payload_hash: &hash,
        payee: view.get("payee").filter(|p| !p.is_null()),
    };
    let statement = ApprovalStatement::derive_as(
        &subject,
        Utc::now() + chrono::Duration::hours(1),
        STATEMENT_V3,
    );
    json!({
        "payload_hash": hash,
        "key_id": key.public_key().key_id().as_str(),
        "signature": key.sign(&statement.to_bytes()).to_text(),
        "expires_at": format_expiry(statement.expires_at),
    })
}

/// A venv made for this test with the Python client and its `verify` extra installed from
/// the registry; removed with the scratch directory.
async fn python_verifier(scratch: PathBuf) -> PathBuf {
    let venv = scratch.join("venv");
    let made = tokio::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .await
        .expect("python3 -m venv");
    assert!(made.status.success(), "{}", text(&made.stderr));
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/python");
    let installed = tokio::process::Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet"])
        .arg(format!("{}[verify]", client.display()))
        .output()
        .await
        .expect("pip install");
    assert!(installed.status.success(), "{}", text(&installed.stderr));
    venv.join("bin/python")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The Python verifier on `file`, in a network namespace of its own (no interface up).
async fn python_verify(python: &Path, file: &Path, key_id: &str) -> Output {
    tokio::process::Command::new("unshare")
        .arg("-n")
        .arg(python)
        .args(["-m", "fleet_client.evidence"])
        .arg(file)
        .args(["--key-id", key_id])
        .output()
        .await
        .expect("unshare -n python")
}

/// `fleetctl verify` with no token, no API and no database: it needs none.
async fn fleetctl_verify(file: &Path, args: &[&str]) -> Output {
    fleet_tests::bare_fleetctl()
        .arg("verify")
        .arg(file)
        .args(args)
        .output()
        .await
        .expect("run fleetctl")
}

/// Both verifiers accept `file`; their reports say what it proves and cannot.
async fn both_verify(python: &Path, file: &Path, key_id: &str) {
    let out = fleetctl_verify(file, &["--key-id", key_id]).await;
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.starts_with("VERIFIED: "), "{said}");
    assert!(said.contains("it proves:"), "{said}");
    assert!(said.contains("not consulted"), "{said}");
    let out = python_verify(python, file, key_id).await;
    let py = text(&out.stdout);
    assert!(out.status.success(), "{py}{}", text(&out.stderr));
    // The same checks in the same words.
    assert_eq!(py, said);
}

/// Both verifiers refuse `doc`, naming `part` first among the failing ones.
async fn both_refuse(
    python: &Path,
    scratch: &Scratch,
    doc: &Value,
    name: &str,
    parts: &str,
    key_id: &str,
) {
    let file = scratch.path(&format!("{name}.evidence.json"));
    std::fs::write(&file, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    let expected = format!("does NOT verify: {parts}\n");
    let out = fleetctl_verify(&file, &["--key-id", key_id]).await;
    assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stdout));
    assert!(text(&out.stdout).starts_with("NOT VERIFIED"), "{name}");
    assert!(
        text(&out.stderr).ends_with(&expected),
        "{name}: {}",
        text(&out.stderr)
    );
    let out = python_verify(python, &file, key_id).await;
    assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stdout));
    assert!(
        text(&out.stderr).ends_with(&expected),
        "{name}: {}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn a_paid_payments_bundle_verifies_offline_in_rust_and_python_and_names_a_changed_part() {
    let fleet = TestFleet::start().await;
    let scratch = Scratch::new();
    let (current, earlier) = evidence_keys(&scratch);
    let key_file = scratch.path("evidence.key");
    let earlier_dir = scratch.path("earlier");
    let api = fleet
        .spawn_api(&[
            ("EVIDENCE_KEY_FILE", key_file.to_str().unwrap()),
            ("EVIDENCE_PUBLIC_KEYS_DIR", earlier_dir.to_str().unwrap()),
        ])
        .await;
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let bob = fleet.token("bob", Role::Approver, &[TENANT]).await;
    let alice_key = fleet.register_key("alice").await;
    let bob_key = fleet.register_key("bob").await;
    // The venv is made while the payment runs.
    let python = tokio::spawn(python_verifier(scratch.0.clone()));

    // 1,500,000.00 KZT: two signed approvals under payments-v3.
    let i = with_amount(intent(), json!(150_000_000));
    let op = op_of(&i);
    let view = api.submitted(&fleet.http, &agent, &i).await;
    let path = format!("/v1/operations/{op}/approve");
    let answer = api
        .post(
            &fleet.http,
            &alice,
            &path,
            &signed_v3(&i, &view, &alice_key),
        )
        .await;
    assert_eq!(
        answer.status(),
        StatusCode::OK,
        "{}",
        answer.text().await.unwrap()
    );
    let signed = signed_approval(&i, &bob_key, Utc::now() + chrono::Duration::hours(1));
    let answer = api.post(&fleet.http, &bob, &path, &signed).await;
    assert_eq!(
        answer.status(),
        StatusCode::OK,
        "{}",
        answer.text().await.unwrap()
    );
    fleet.reaches(&op, Status::Succeeded).await;

    // The published keys: the current one first, the earlier one kept.
    let keys: Value = fleet
        .http
        .get(api.url("/v1/evidence-keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key_id = current.public_key().key_id().as_str().to_owned();
    let listed: Vec<(Value, Value)> = keys["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["key_id"].clone(), k["current"].clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (json!(key_id), json!(true)),
            (json!(earlier.public_key().key_id().as_str()), json!(false)),
        ]
    );
    assert_eq!(
        keys["data"][0]["public_key"],
        current.public_key().to_text()
    );

    // The bundle, as an approver fetches it.
    let out = api.fleetctl_as(&alice, &[], &["evidence", &op]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = scratch.path("op.evidence.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["signature"]["key_id"], json!(key_id));
    assert_eq!(
        fleet_core::hash::canonical_json(&doc) + "\n",
        text(&out.stdout),
        "sent as its canonical text"
    );
    let statements: Vec<&Value> = doc["parts"]["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["statement"]["statement"])
        .collect();
    assert_eq!(
        statements,
        [
            &json!(STATEMENT_V3),
            &json!(fleet_core::approval_statement::STATEMENT_VERSION)
        ],
        "each approval's statement in the version it was signed under"
    );
    assert_eq!(doc["parts"]["provider"]["confirmation"]["by"], "answer");

    let python = python.await.unwrap();
    both_verify(&python, &file, &key_id).await;
    // By the public key file too; by another key, refused.
    let pub_file = scratch.path("evidence.key.pub");
    let out = fleetctl_verify(&file, &["--public-key", pub_file.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}", text(&out.stdout));
    let other = earlier.public_key().key_id().as_str().to_owned();
    both_refuse(&python, &scratch, &doc, "other-key", "signature", &other).await;

    // A changed byte anywhere names its part.
    let mut d = doc.clone();
    d["parts"]["snapshot"]["members"]["payload"]["amount_minor"] = json!(150_000_001);
    both_refuse(
        &python,
        &scratch,
        &d,
        "snapshot",
        "snapshot, signature",
        &key_id,
    )
    .await;
    let mut d = doc.clone();
    let sig = d["parts"]["approvals"][1]["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    d["parts"]["approvals"][1]["signature"] = json!(format!("{flipped}{}", &sig[1..]));
    both_refuse(
        &python,
        &scratch,
        &d,
        "approval-signature",
        "approvals, approval by bob, quorum, signature",
        &key_id,
    )
    .await;
    let mut d = doc.clone();
    let policy = d["parts"]["policy"]["text"].as_str().unwrap().to_owned();
    d["parts"]["policy"]["text"] = json!(format!("{policy}#"));
    both_refuse(
        &python,
        &scratch,
        &d,
        "policy",
        "policy, signature",
        &key_id,
    )
    .await;
    let mut d = doc.clone();
    d["parts"]["provider"]["object_id"] = json!("pay_forged");
    both_refuse(
        &python,
        &scratch,
        &d,
        "provider",
        "provider, signature",
        &key_id,
    )
    .await;

    // Bob's key is removed later: a bundle made now still verifies, and says when.
    let bob_key_id = bob_key.public_key().key_id().as_str().to_owned();
    fleet
        .fleetctl(&["key", "remove", &bob_key_id, "--by", "security-desk"])
        .await;
    let out = api.fleetctl_as(&agent, &[], &["evidence", &op]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let later = scratch.path("later.evidence.json");
    std::fs::write(&later, &out.stdout).unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let bobs = &doc["parts"]["approvals"][1]["key"];
    assert!(bobs["removed_at"].is_string(), "{bobs}");
    assert_eq!(bobs["valid_at_approval"], true, "{bobs}");
    both_verify(&python, &later, &key_id).await;

    // Another tenant's principal is told the operation does not exist.
    let stranger = fleet.token("other-bot", Role::Agent, &["org_999"]).await;
    let (status, _) = api
        .get(
            &fleet.http,
            &stranger,
            &format!("/v1/operations/{op}/evidence"),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    drop(api);
    drop(scratch);
    fleet.stop().await;
}

#[tokio::test]
async fn without_a_key_the_route_says_which_setting_and_an_open_key_file_stops_the_start() {
    let fleet = TestFleet::start().await;
    let scratch = Scratch::new();
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let i = intent();
    let op = op_of(&i);
    api.submitted(&fleet.http, &agent, &i).await;
    let (status, problem) = api
        .get(
            &fleet.http,
            &agent,
            &format!("/v1/operations/{op}/evidence"),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{problem}");
    assert_eq!(problem["code"], "evidence_key_not_configured");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("EVIDENCE_KEY_FILE"),
        "{problem}"
    );
    let keys: Value = fleet
        .http
        .get(api.url("/v1/evidence-keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(keys, json!({"data": []}));
    let out = api.fleetctl_as(&agent, &[], &["evidence", &op]).await;
    // fleetctl's status for a 503: temporarily unavailable.
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("evidence_key_not_configured"),
        "{}",
        text(&out.stderr)
    );
    drop(api);

    // A key file its group may read: the start stops, naming the setting and the fix.
    let key = fleetctl::key::new_key().unwrap();
    let open = scratch.path("open.key");
    std::fs::write(&open, key.to_text()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o640)).unwrap();
    let mut process = fleet.spawn_process(
        "fleet-api",
        &[
            ("API_ADDR", "127.0.0.1:0"),
            ("EVIDENCE_KEY_FILE", open.to_str().unwrap()),
        ],
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = process.exited() {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "fleet-api did not stop: {}",
            process.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!status.success());
    let log = process.log_text();
    assert!(log.contains("EVIDENCE_KEY_FILE"), "{log}");
    assert!(log.contains("chmod 600"), "{log}");
    assert!(!log.contains(&key.to_text()), "never the key");
    drop(scratch);
    fleet.stop().await;
}
