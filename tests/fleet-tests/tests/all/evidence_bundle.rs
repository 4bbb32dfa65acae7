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
//!
//! Keys are registered as a deployment does: the owner registers the administrator dana's
//! key with the deployment's evidence key (`fleetctl key add --evidence-key`), dana
//! registers the approvers' keys with her own (`--signing-key`); the bundle carries each
//! registration down to the evidence key, both verifiers check it, and a changed byte in a
//! registration's signature is named. A key without a signed registration is refused by
//! fleetctl, by the database as its owner, and to the API's role. An operation paid under
//! a standing mandate verifies, and a changed byte of the mandate's signature is named.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use chrono::Utc;
use fleet_core::approval_statement::{format_expiry, STATEMENT_V3};
use fleet_core::key_registration::RegistrarKey;
use fleet_core::{Action, ApprovalStatement, ApproverKey, Role, StatementSubject, Status};
use fleet_store::DbRole;
use fleet_tests::{answer_of, hash_of, intent, op_of, signed_approval, with_amount, TestFleet};
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

/// The administrator dana, her key registered by the owner with the deployment's evidence
/// key at `evidence_key_file` through `fleetctl` (the root of every chain), written to
/// `scratch`/dana.key for her own `fleetctl key add --signing-key`.
async fn dana(fleet: &TestFleet, scratch: &Scratch, evidence_key_file: &Path) -> ApproverKey {
    let dana = fleetctl::key::new_key().unwrap();
    fleetctl::key::write_private(&scratch.path("dana.key"), &dana).unwrap();
    fleet
        .fleetctl(&[
            "principal",
            "add",
            "--name",
            "dana",
            "--role",
            "admin",
            "--tenant",
            TENANT,
        ])
        .await;
    let out = fleet
        .fleetctl(&[
            "key",
            "add",
            "--principal",
            "dana",
            "--public-key",
            &dana.public_key().to_text(),
            "--evidence-key",
            evidence_key_file.to_str().unwrap(),
            "--by",
            "deployment-owner",
        ])
        .await;
    assert!(text(&out.stdout).contains("registered ed25519:"));
    dana
}

/// `doc` with its digests made again and signed again with the deployment's `key`: the
/// change a test made inside a part is then the only one a verifier can find.
fn resigned(doc: &Value, key: &ApproverKey) -> Value {
    let mut doc = doc.clone();
    for part in fleet_core::evidence::PARTS {
        doc["digests"][part] = json!(fleet_core::evidence::digest(&doc["parts"][part]));
    }
    doc.as_object_mut().unwrap().remove("signature");
    fleet_core::evidence::sign(doc, key)
}

/// `text` with its first character changed (a base64url signature stays well-formed).
fn flipped(text: &Value) -> Value {
    let text = text.as_str().unwrap();
    let first = if text.starts_with('A') { "B" } else { "A" };
    json!(format!("{first}{}", &text[1..]))
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
    // Built from a copy of its own: setuptools builds in the source tree (`build/`), and
    // two tests building the same tree at once remove each other's files.
    let client = scratch.join("client");
    let copied = tokio::process::Command::new("cp")
        .arg("-r")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/python"))
        .arg(&client)
        .output()
        .await
        .expect("cp -r");
    assert!(copied.status.success(), "{}", text(&copied.stderr));
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
    let dana = dana(&fleet, &scratch, &key_file).await;
    // Alice's key through fleetctl as dana runs it, Bob's through the same store call.
    let alice_key = fleetctl::key::new_key().unwrap();
    fleet
        .fleetctl(&[
            "key",
            "add",
            "--principal",
            "alice",
            "--public-key",
            &alice_key.public_key().to_text(),
            "--signing-key",
            scratch.path("dana.key").to_str().unwrap(),
            "--by",
            "dana",
        ])
        .await;
    let bob_key = fleet
        .register_key_by("bob", RegistrarKey::Admin(&dana))
        .await;
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
    let keys = fleet.get_json(&api.url("/v1/evidence-keys")).await;
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

    // Each key carries its signed registration, down to the evidence key.
    for a in doc["parts"]["approvals"].as_array().unwrap() {
        let key = &a["key"];
        assert_eq!(key["registration_signed"], true, "{key}");
        assert_eq!(key["registration"]["registrar"]["principal"], "dana");
        let root = &key["registrar"]["registration"]["registrar"];
        assert_eq!(root["kind"], "evidence_key", "{key}");
        assert_eq!(root["key_id"], json!(key_id));
    }

    let python = python.await.unwrap();
    both_verify(&python, &file, &key_id).await;
    let said = text(&fleetctl_verify(&file, &["--key-id", &key_id]).await.stdout);
    assert!(
        said.contains("with the deployment's evidence key")
            && said.contains("signed by administrator dana"),
        "{said}"
    );

    // A byte of Bob's key registration's signature changed, the bundle signed again by
    // the deployment: the registration is named, and his approval no longer counts.
    let mut d = doc.clone();
    let k = &mut d["parts"]["approvals"][1]["key"];
    k["registration_signature"] = flipped(&k["registration_signature"]);
    let bob_key_id = bob_key.public_key().key_id().as_str().to_owned();
    both_refuse(
        &python,
        &scratch,
        &resigned(&d, &current),
        "registration-signature",
        &format!("registration of {bob_key_id}, quorum"),
        &key_id,
    )
    .await;
    // By the public key file too; by another key, refused.
    let pub_file = scratch.path("evidence.key.pub");
    let out = fleetctl_verify(&file, &["--public-key", pub_file.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}", text(&out.stdout));
    // Another key is neither the bundle's signer nor the root of its registrations.
    let other = earlier.public_key().key_id().as_str().to_owned();
    let ids = [&dana, &alice_key, &bob_key].map(|k| k.public_key().key_id().as_str().to_owned());
    let expected = format!(
        "registration of {}, registration of {}, registration of {}, quorum, signature",
        ids[0], ids[1], ids[2]
    );
    both_refuse(&python, &scratch, &doc, "other-key", &expected, &other).await;

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
    let keys = fleet.get_json(&api.url("/v1/evidence-keys")).await;
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

#[tokio::test]
async fn a_key_without_a_signed_registration_is_refused_by_fleetctl_and_the_database() {
    let fleet = TestFleet::start().await;
    let scratch = Scratch::new();
    fleet.token("alice", Role::Approver, &[TENANT]).await;
    let alice_key = fleet.register_key("alice").await;
    fleetctl::key::write_private(&scratch.path("alice.key"), &alice_key).unwrap();
    let root = fleetctl::key::new_key().unwrap();
    fleetctl::key::write_private(&scratch.path("evidence.key"), &root).unwrap();
    let new_key = fleetctl::key::new_key().unwrap().public_key();
    let add = |extra: &[&str]| {
        let mut args = vec![
            "key".to_owned(),
            "add".to_owned(),
            "--principal".to_owned(),
            "alice".to_owned(),
            "--public-key".to_owned(),
            new_key.to_text(),
            "--by".to_owned(),
            "mallory".to_owned(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    };
    let refused = |out: &Output, says: &str| {
        assert!(!out.status.success(), "{}", text(&out.stdout));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    };
    // No signing key at all.
    let args = add(&[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fleet_tests::bare_fleetctl()
        .env("DATABASE_URL", &fleet.database_url)
        .args(&args)
        .output()
        .await
        .unwrap();
    refused(&out, "a registration is signed");
    // An approver's key is no administrator's.
    let args = add(&["--signing-key", scratch.path("alice.key").to_str().unwrap()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fleet.fleetctl_with(&[], &args).await;
    refused(&out, "not a live administrator's key");
    // The deployment's key registers administrators only.
    let args = add(&[
        "--evidence-key",
        scratch.path("evidence.key").to_str().unwrap(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fleet.fleetctl_with(&[], &args).await;
    refused(&out, "administrators' keys only");

    // The owner's own SQL: without a registration, marked legacy, or with a registration
    // that describes another key.
    let sql = fleet.sql().await;
    let insert = |extra_columns: &str, extra_values: &str| {
        format!(
            "INSERT INTO approver_keys (key_id, principal, algorithm, public_key, registered_by{extra_columns})
             VALUES ($1, 'alice', 'ed25519', $2, 'mallory'{extra_values})"
        )
    };
    let id = new_key.key_id().as_str().to_owned();
    let bytes = new_key.to_stored_bytes();
    let signed_rule = (
        "23514".to_owned(),
        Some("approver_keys_registration_signed".to_owned()),
    );
    let plain = sql
        .execute(&insert("", ""), &[&id, &bytes])
        .await
        .map(|_| 0);
    assert_eq!(answer_of(plain), signed_rule);
    let legacy = sql
        .execute(&insert(", registration_legacy", ", true"), &[&id, &bytes])
        .await;
    assert_eq!(answer_of(legacy), signed_rule);
    let (stored, signature, registrar): (Value, Vec<u8>, String) = {
        let row = sql
            .query_one(
                "SELECT registration, registration_signature, registrar_key_id FROM approver_keys WHERE key_id = $1",
                &[&alice_key.public_key().key_id().as_str()],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1), row.get(2))
    };
    let borrowed = sql
        .execute(
            &insert(
                ", registration, registration_signature, registrar_key_id",
                ", $3, $4, $5",
            ),
            &[&id, &bytes, &stored, &signature, &registrar],
        )
        .await;
    assert_eq!(
        answer_of(borrowed),
        signed_rule,
        "another key's registration"
    );
    // The API's role writes no key at all.
    let api_role = fleet.connect_as(DbRole::Api).await;
    let as_api = api_role.execute(&insert("", ""), &[&id, &bytes]).await;
    assert_eq!(answer_of(as_api).0, "42501");
    assert_eq!(
        fleet
            .count("SELECT count(*) FROM approver_keys WHERE principal = 'alice'")
            .await,
        1
    );
    drop(scratch);
    fleet.stop().await;
}

/// A payment of `amount_minor` KZT to vendor_77 for its own invoice, under payments-v5
/// (whose rule lets a mandate approve it).
fn mandated_payment(amount_minor: i64) -> Value {
    let mut i = intent();
    i["policy_version"] = json!("payments-v5");
    i["payload"]["amount_minor"] = json!(amount_minor);
    i["payload"]["invoice_id"] = json!(format!("inv_e{amount_minor}"));
    i
}

#[tokio::test]
async fn a_payment_under_a_mandate_verifies_and_a_changed_mandate_signature_is_named() {
    let fleet = TestFleet::start().await;
    let scratch = Scratch::new();
    let (current, _) = evidence_keys(&scratch);
    let key_file = scratch.path("evidence.key");
    fleet
        .assign_policy(Some(TENANT), "payment.create", "payments-v5")
        .await;
    let api = fleet
        .spawn_api(&[("EVIDENCE_KEY_FILE", key_file.to_str().unwrap())])
        .await;
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let dana = dana(&fleet, &scratch, &key_file).await;
    let alice_key = fleet
        .register_key_by("alice", RegistrarKey::Admin(&dana))
        .await;
    let python = tokio::spawn(python_verifier(scratch.0.clone()));

    // A first payment to vendor_77, approved by Alice: its account is known from then on.
    let seed = mandated_payment(10_000);
    let view = api.submitted(&fleet.http, &agent, &seed).await;
    let fingerprint = view["payee"]["account"]["fingerprint"].clone();
    let approve = format!("/v1/operations/{}/approve", op_of(&seed));
    let answer = api
        .post(
            &fleet.http,
            &alice,
            &approve,
            &json!({"payload_hash": hash_of(&seed)}),
        )
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    fleet.reaches(&op_of(&seed), Status::Succeeded).await;

    // Alice's mandate covers the next one, which is paid without a person.
    let paid = mandated_payment(10_001);
    api.submitted(&fleet.http, &agent, &paid).await;
    let mandate_id = format!("md_{}", ulid::Ulid::new());
    let statement = json!({
        "statement": "fleet.mandate.v1", "mandate_id": mandate_id, "tenant_id": TENANT,
        "actions": ["payment.create"],
        "payees": [{"id": "vendor_77", "account_fingerprint": fingerprint}],
        "currency": "KZT", "per_operation_max_minor": 20_000, "budget_minor": 100_000,
        "count_limit": 5,
        "valid_from": format_expiry(Utc::now() - chrono::Duration::minutes(1)),
        "valid_until": format_expiry(Utc::now() + chrono::Duration::hours(1)),
        "for_principal": "billing-bot",
    });
    let bytes = fleet_core::canonical_json(&statement).into_bytes();
    let body = json!({
        "statement": statement,
        "key_id": alice_key.public_key().key_id().as_str(),
        "signature": alice_key.sign(&bytes).to_text(),
    });
    let granted = api.post(&fleet.http, &alice, "/v1/mandates", &body).await;
    assert_eq!(granted.status(), StatusCode::CREATED);
    let op = op_of(&paid);
    fleet.reaches(&op, Status::Succeeded).await;

    let out = api.fleetctl_as(&agent, &[], &["evidence", &op]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = scratch.path("mandated.evidence.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["parts"]["operation"]["decided_by"],
        json!(format!("mandate:{mandate_id}"))
    );
    assert_eq!(
        doc["parts"]["mandates"][0]["key"]["registration_signed"],
        true
    );
    let key_id = current.public_key().key_id().as_str().to_owned();
    let python = python.await.unwrap();
    both_verify(&python, &file, &key_id).await;
    let said = text(&fleetctl_verify(&file, &["--key-id", &key_id]).await.stdout);
    assert!(
        said.contains(&format!("terms of mandate {mandate_id}"))
            && said.contains("its signed terms cover this operation"),
        "{said}"
    );

    // A byte of the mandate's signature changed, the bundle signed again: the mandate is
    // named, and the operation is no longer shown approved.
    let mut d = doc.clone();
    let m = &mut d["parts"]["mandates"][0];
    m["signature"] = flipped(&m["signature"]);
    both_refuse(
        &python,
        &scratch,
        &resigned(&d, &current),
        "mandate-signature",
        &format!("mandate {mandate_id}, quorum"),
        &key_id,
    )
    .await;
    // Its terms widened after signing: the signature no longer covers them.
    let mut d = doc.clone();
    d["parts"]["mandates"][0]["statement"]["per_operation_max_minor"] = json!(5_000);
    both_refuse(
        &python,
        &scratch,
        &resigned(&d, &current),
        "mandate-terms",
        &format!("mandate {mandate_id}, terms of mandate {mandate_id}, quorum"),
        &key_id,
    )
    .await;
    drop(api);
    drop(scratch);
    fleet.stop().await;
}
