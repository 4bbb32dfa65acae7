//! Signed batches through the real fleet-api, execute and the provider simulator: a batch
//! signed with the approver's registered key counts as a signed approval of each listed
//! operation, where the database and execute verify it as they verify a per-operation
//! signature. A payment under a policy asking one signed approval (`payments-s1`, written
//! for the test beside the repository's policies) is paid on one signed batch; a
//! 1,500,000.00 KZT payment (payments-v3: two approvers, both signed) is paid
//! once two approvers each approve it in a signed batch; a batch whose signature does not
//! verify (written past the API, as a compromised API could) counts for nothing at
//! execute; a batch signed with a key removed before the claim counts for nothing at the
//! claim.

use chrono::{Duration, Utc};
use fleet_core::batch_approval::{BatchItem, BatchStatement};
use fleet_core::{ApproverKey, Role, Status};
use fleet_tests::{hash_of, intent, op_of, with_amount, ApiProcess, Signer, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

/// 1,500,000.00 KZT to vendor_77: two approvers, both signed (payments-v3).
fn big_payment() -> Value {
    let mut i = with_amount(intent(), json!(150_000_000));
    i["operation_id"] = json!(format!("op_{}", ulid::Ulid::new()));
    i
}

fn batch_of(i: &Value) -> BatchStatement {
    BatchStatement::new(
        format!("ab_{}", ulid::Ulid::new()),
        TENANT.to_owned(),
        vec![BatchItem {
            operation_id: op_of(i),
            payload_hash: hash_of(i),
            amount: Some((150_000_000, "KZT".to_owned())),
        }],
        Utc::now() + Duration::hours(1),
    )
    .unwrap()
}

struct Approvers {
    fleet: TestFleet,
    api: ApiProcess,
    alice: Signer,
    bob: Signer,
}

/// A fleet with the API, and the big payment submitted by an agent: (approvers, intent).
async fn a_big_payment_waiting() -> (Approvers, Value) {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.signer("alice").await;
    let bob = fleet.signer("bob").await;
    let i = big_payment();
    api.submitted(&fleet.http, &agent, &i).await;
    let row = fleet.row(&op_of(&i)).await;
    assert_eq!(row.signatures_required, 2, "two signed approvals");
    (
        Approvers {
            fleet,
            api,
            alice,
            bob,
        },
        i,
    )
}

/// The body of `POST /v1/approvals/batch`: `batch` signed with `key`.
fn signed_batch(batch: &BatchStatement, key: &ApproverKey) -> Value {
    json!({
        "statement": batch.to_json(),
        "key_id": key.public_key().key_id().as_str(),
        "signature": key.sign(&batch.to_bytes()).to_text(),
    })
}

impl Approvers {
    /// `POST /v1/approvals/batch` of `batch`, signed with the signer's key, as the signer.
    async fn send(&self, signer: &Signer, batch: &BatchStatement) -> (StatusCode, Value) {
        let body = signed_batch(batch, &signer.key);
        let response = self
            .api
            .post(
                &self.fleet.http,
                &signer.token,
                "/v1/approvals/batch",
                &body,
            )
            .await;
        (response.status(), response.json().await.unwrap())
    }

    /// How the database counts the operation's approvals now: (counted, signed).
    async fn quorum(&self, op: &str) -> (i64, i64) {
        let row = self
            .fleet
            .sql()
            .await
            .query_one(
                "SELECT counted, signed FROM fleet_quorum_count($1, $2)",
                &[&op, &TENANT],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    }

    async fn stop(self) {
        drop(self.api);
        self.fleet.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_needing_signed_approvals_is_approved_by_signed_batches_and_paid_once() {
    let (mut a, i) = a_big_payment_waiting().await;
    let op = op_of(&i);
    a.fleet.spawn_execute();
    let (status, answer) = a.send(&a.alice, &batch_of(&i)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["operations"][0]["approval_status"], "pending");
    assert_eq!(a.quorum(&op).await, (1, 1), "the batch counts as signed");
    let (status, answer) = a.send(&a.bob, &batch_of(&i)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["operations"][0]["approval_status"], "approved");
    a.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(a.fleet.sim_posts(&op).await, 1, "paid once");
    // Each approval carries its batch's own signature, which execute verified.
    let signed = a
        .fleet
        .count(&format!(
            "SELECT count(*) FROM approvals a JOIN approval_batches b USING (batch_id)
             WHERE a.operation_id = '{op}' AND a.signature = b.signature AND a.key_id = b.key_id"
        ))
        .await;
    assert_eq!(signed, 2);
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_signature_does_not_verify_counts_for_nothing() {
    let (mut a, i) = a_big_payment_waiting().await;
    let op = op_of(&i);
    // At the API's door: refused, nothing recorded.
    let forged = batch_of(&i);
    let body = json!({
        "statement": forged.to_json(),
        "key_id": a.alice.key.public_key().key_id().as_str(),
        "signature": a.bob.key.sign(&forged.to_bytes()).to_text(),
    });
    let response = a
        .api
        .post(&a.fleet.http, &a.alice.token, "/v1/approvals/batch", &body)
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(a.quorum(&op).await, (0, 0));
    // Past the API, as its own database role (what a compromised API could do): the
    // database cannot verify a signature, records it, and counts it as signed...
    let (status, _) = a.send(&a.bob, &batch_of(&i)).await;
    assert_eq!(status, StatusCode::OK);
    let api_role = a.fleet.sql_as_api_role().await;
    let key_id = a.alice.key.public_key().key_id().as_str().to_owned();
    let rows = api_role
        .query(
            "SELECT approved FROM fleet_record_batch($1, $2, 'alice', $3, $4, 'token')",
            &[&forged.to_json(), &forged.hash(), &key_id, &vec![7_u8; 64]],
        )
        .await
        .unwrap();
    assert!(rows[0].get::<_, bool>(0), "the database approved it");
    // ...and execute verifies it over the batch's statement before any call: nothing is
    // sent, a person is asked.
    a.fleet.spawn_execute();
    a.fleet.ring_execute(&op).await;
    a.fleet
        .escalated_as(&op, Status::Unknown, "approval_signature_invalid")
        .await;
    assert_eq!(a.fleet.sim_posts(&op).await, 0, "nothing was sent");
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_signed_with_a_key_removed_before_the_claim_counts_for_nothing() {
    let (mut a, i) = a_big_payment_waiting().await;
    let op = op_of(&i);
    for signer in [&a.alice, &a.bob] {
        let (status, answer) = a.send(signer, &batch_of(&i)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    assert_eq!(a.quorum(&op).await, (2, 2));
    // Bob's key is found compromised before the payment ran.
    let bob_key_id = a.bob.key.public_key().key_id().to_string();
    let removed = a
        .fleet
        .fleetctl(&["key", "remove", &bob_key_id, "--by", "security-desk"])
        .await;
    assert!(String::from_utf8_lossy(&removed.stdout).contains("removed"));
    assert_eq!(
        a.quorum(&op).await,
        (2, 1),
        "bob's batch no longer counts as signed"
    );
    // The claim refuses it: rung, execute leaves it as it was, and nothing is sent.
    a.fleet.spawn_execute();
    a.fleet.never_claimed(&op).await;
    a.stop().await;
}

/// The repository's policies and `payments-s1` (one approver, whose approval is signed),
/// in a directory of their own: (directory, the set as the processes load it).
fn policies_with_one_signed() -> (std::path::PathBuf, fleet_core::PolicySet) {
    let dir = std::env::temp_dir().join(format!("fleet-policies-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fleet_tests::policy_dir()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::write(
        dir.join("payments-s1.toml"),
        "policy_version = \"payments-s1\"\n\n[actions.\"payment.create\"]\napprovers = 1\n\
         signed_approvals = 1\nunknown_payee = \"refuse\"\n",
    )
    .unwrap();
    let set = fleet_runtime::load_policies(&dir).expect("the policies load");
    (dir, set)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_needing_one_signed_approval_is_approved_by_one_signed_batch_and_paid() {
    let (dir, set) = policies_with_one_signed();
    let mut fleet = TestFleet::start().await;
    fleet.load_policies(&set).await;
    fleet
        .assign_policy(Some(TENANT), "payment.create", "payments-s1")
        .await;
    let api = fleet
        .spawn_api(&[("POLICY_DIR", dir.to_str().unwrap())])
        .await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.signer("alice").await;
    fleet.spawn_execute();
    let mut i = intent();
    i["operation_id"] = json!(format!("op_{}", ulid::Ulid::new()));
    i["policy_version"] = json!("payments-s1");
    api.submitted(&fleet.http, &agent, &i).await;
    let op = op_of(&i);
    assert_eq!(fleet.row(&op).await.signatures_required, 1);
    let batch = BatchStatement::new(
        format!("ab_{}", ulid::Ulid::new()),
        TENANT.to_owned(),
        vec![BatchItem {
            operation_id: op.clone(),
            payload_hash: hash_of(&i),
            amount: Some((
                i["payload"]["amount_minor"].as_i64().unwrap(),
                "KZT".to_owned(),
            )),
        }],
        Utc::now() + Duration::hours(1),
    )
    .unwrap();
    let body = signed_batch(&batch, &alice.key);
    let response = api
        .post(&fleet.http, &alice.token, "/v1/approvals/batch", &body)
        .await;
    let status = response.status();
    let answer: Value = response.json().await.unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["operations"][0]["approval_status"], "approved");
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_posts(&op).await, 1, "paid once");
    drop(api);
    fleet.stop().await;
}
