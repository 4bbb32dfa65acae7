//! Approvals signed by the approvers' own keys, through the real fleet (fleet-api as a
//! process, execute and reconcile in-process, the provider simulator over HTTP): a
//! 1,500,000.00 KZT payment, which payments-v3 says needs two signed approvals, is paid
//! once when two approvers with registered keys sign it; and whatever reaches the
//! approvals table without two valid signatures (forged, replayed from another operation,
//! expired, by a removed key, by a key registered after the approval, or written straight
//! into the database as the API's role) is refused by fleet-execute before any call, never
//! claimed (the claim counts the live keys' signatures itself), or refused by the database.

use chrono::{DateTime, Duration, Utc};
use fleet_broker::Queue;
use fleet_core::{ApproverKey, Doorbell, Role, Status};
use fleet_tests::{
    contract, eventually, fast_reconcile, hash_of, intent, op_of, signed_approval, two_columns,
    with_amount, ApiProcess, Signer, TestFleet,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const CHECK_VIOLATION: &str = "23514";

/// A fleet with the API, an agent, and two approvers whose keys are registered.
struct Signers {
    fleet: TestFleet,
    api: ApiProcess,
    agent: String,
    alice: Signer,
    bob: Signer,
}

async fn signers() -> Signers {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let alice = fleet.signer("alice").await;
    let bob = fleet.signer("bob").await;
    Signers {
        fleet,
        api,
        agent,
        alice,
        bob,
    }
}

/// 1,500,000.00 KZT to vendor_77: two approvers, both signed (payments-v3).
fn big_payment() -> Value {
    with_amount(intent(), json!(150_000_000))
}

fn in_an_hour() -> DateTime<Utc> {
    Utc::now() + Duration::hours(1)
}

impl Signers {
    /// Submits through the API as the agent; it must be stored.
    async fn submit(&self, i: &Value) -> Value {
        self.api.submitted(&self.fleet.http, &self.agent, i).await
    }

    /// A [`big_payment`] submitted: (intent, operation id).
    async fn big_payment_submitted(&self) -> (Value, String) {
        let i = big_payment();
        self.submit(&i).await;
        let op = op_of(&i);
        (i, op)
    }

    /// `POST /v1/operations/{op}/approve` as the bearer of `token`: (status, body).
    async fn approve(&self, token: &str, i: &Value, body: Value) -> (StatusCode, Value) {
        let path = format!("/v1/operations/{}/approve", op_of(i));
        let response = self.api.post(&self.fleet.http, token, &path, &body).await;
        (response.status(), response.json().await.unwrap())
    }

    /// Alice and Bob both approve `i` through the API, signed, valid until `expires_at`.
    async fn both_sign(&self, i: &Value, expires_at: DateTime<Utc>) {
        let (status, first) = self
            .approve(
                &self.alice.token,
                i,
                signed_approval(i, &self.alice.key, expires_at),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{first}");
        let (status, second) = self
            .approve(
                &self.bob.token,
                i,
                signed_approval(i, &self.bob.key, expires_at),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{second}");
        assert_eq!(second["approval_status"], "approved", "{second}");
    }

    async fn stop(self) {
        drop(self.api);
        self.fleet.stop().await;
    }
}

/// The SQLSTATE of a refused statement, or "ok".
async fn sqlstate(client: &tokio_postgres::Client, sql: &str, op: &str) -> String {
    match client.execute(sql, &[&op]).await {
        Ok(_) => "ok".to_owned(),
        Err(e) => e
            .code()
            .map_or_else(|| e.to_string(), |c| c.code().to_owned()),
    }
}

/// What a compromised API writes to mark an operation approved.
const MARK_APPROVED: &str =
    "UPDATE operations SET approval_status = 'approved', approved_hash = payload_hash,
        decided_by = 'bob', decided_at = now() WHERE operation_id = $1";

/// fleet-execute claimed the operation and refused to call: escalated with
/// `approval_signature_invalid`, its attempt `not_executed`, an `escalated` outcome event,
/// and the provider holding nothing.
async fn refused_by_execute(fleet: &TestFleet, op: &str) {
    fleet
        .escalated_as(op, Status::Unknown, "approval_signature_invalid")
        .await;
    let sql = fleet.sql().await;
    let attempts: Vec<(String, Option<String>)> = two_columns(
        &sql,
        "SELECT outcome, detail FROM attempts WHERE operation_id = $1",
        &[&op],
    )
    .await;
    assert_eq!(
        attempts,
        [(
            "not_executed".to_owned(),
            Some("approval_signature_invalid".to_owned())
        )]
    );
    let escalated: i64 = sql
        .query_one(
            "SELECT count(*) FROM operation_outbox WHERE operation_id = $1 AND event_type = 'escalated'
               AND data->>'reason' = 'approval_signature_invalid'",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(escalated, 1, "one escalated outcome event");
    assert_eq!(fleet.sim_posts(op).await, 0, "nothing was sent");
    assert_eq!(fleet.sim_effects(op).await, 0, "the provider holds nothing");
}

/// The claim refuses the operation (the database's quorum rule counts too few signatures
/// by live keys): execute, started now and rung, claims nothing
/// ([`TestFleet::never_claimed`]).
async fn never_claimed(fleet: &mut TestFleet, op: &str) {
    fleet.spawn_execute();
    fleet.never_claimed(op).await;
}

/// Waits until the database answers `true` to `sql` about the operation `op` (`$1`).
async fn until_true(fleet: &TestFleet, what: &str, sql: &str, op: &str) {
    let client = fleet.sql().await;
    eventually(what, || {
        let client = &client;
        async move {
            let holds: bool = client.query_one(sql, &[&op]).await.ok()?.get(0);
            holds.then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn a_million_kzt_payment_signed_by_two_registered_approvers_is_paid_once() {
    let mut s = signers().await;
    s.fleet.spawn_execute();
    let i = big_payment();
    let op = op_of(&i);
    let prepared = s.submit(&i).await;
    assert_eq!(prepared["approvals_required"], 2);
    let required: i16 = s
        .fleet
        .sql()
        .await
        .query_one(
            "SELECT signatures_required FROM operations WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(required, 2, "fixed at intake from payments-v3");

    // Refused before anything is recorded: no signature, another approver's key, a
    // signature that is not of this statement, an expiry beyond a day.
    let (status, body) = s
        .approve(&s.alice.token, &i, json!({"payload_hash": hash_of(&i)}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("signature_required"))
    );
    let bobs_key_for_alice = signed_approval(&i, &s.bob.key, in_an_hour());
    let (status, body) = s.approve(&s.alice.token, &i, bobs_key_for_alice).await;
    assert_eq!(
        (status, &body["error"]),
        (
            StatusCode::BAD_REQUEST,
            &json!({"code": "signature_invalid", "field": "key_id"})
        )
    );
    let mut garbage = signed_approval(&i, &s.alice.key, in_an_hour());
    garbage["signature"] = json!(ApproverKey::from_seed([9; 32]).sign(b"x").to_text());
    let (status, body) = s.approve(&s.alice.token, &i, garbage).await;
    assert_eq!(
        (status, &body["error"]),
        (
            StatusCode::BAD_REQUEST,
            &json!({"code": "signature_invalid", "field": "signature"})
        )
    );
    let too_far = signed_approval(&i, &s.alice.key, Utc::now() + Duration::hours(25));
    let (status, body) = s.approve(&s.alice.token, &i, too_far).await;
    assert_eq!(
        (status, &body["error"]),
        (
            StatusCode::BAD_REQUEST,
            &json!({"code": "signature_invalid", "field": "expires_at"})
        )
    );
    let recorded: i64 = s
        .fleet
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM approvals WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded, 0, "nothing recorded for a refused signature");

    s.both_sign(&i, in_an_hour()).await;
    s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(s.fleet.sim_effects(&op).await, 1, "paid once");
    let signed: Vec<(String, String, i32)> = s
        .fleet
        .sql()
        .await
        .query(
            "SELECT principal, key_id, octet_length(signature) FROM approvals WHERE operation_id = $1 ORDER BY principal",
            &[&op],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        signed,
        [
            (
                "alice".to_owned(),
                s.alice.key.public_key().key_id().to_string(),
                64
            ),
            (
                "bob".to_owned(),
                s.bob.key.public_key().key_id().to_string(),
                64
            ),
        ]
    );
    s.stop().await;
}

#[tokio::test]
async fn approvals_written_as_the_api_role_pay_nothing_unsigned_refused_by_the_database_forged_by_execute(
) {
    let mut s = signers().await;
    let api_role = s.fleet.sql_as_api_role().await;

    // Unsigned approvals of both approvers, then "approved": the database refuses it.
    let unsigned = big_payment();
    s.submit(&unsigned).await;
    let op = op_of(&unsigned);
    for who in ["alice", "bob"] {
        let insert = format!("INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash)
                              SELECT operation_id, '{who}', 'token', payload_hash FROM operations WHERE operation_id = $1");
        assert_eq!(sqlstate(&api_role, &insert, &op).await, "ok");
    }
    assert_eq!(
        sqlstate(&api_role, MARK_APPROVED, &op).await,
        CHECK_VIOLATION
    );
    // Nor may the API role say when an approval was made.
    assert_eq!(
        sqlstate(
            &api_role,
            "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash, at)
             SELECT operation_id, 'carol', 'token', payload_hash, now() FROM operations WHERE operation_id = $1",
            &op
        )
        .await,
        "42501"
    );

    // Garbage signatures naming the approvers' registered keys: the database cannot check
    // an Ed25519 signature, so it lets "approved" through; execute checks, and refuses.
    let forged = big_payment();
    s.submit(&forged).await;
    let forged_op = op_of(&forged);
    for (who, key) in [("alice", &s.alice.key), ("bob", &s.bob.key)] {
        let insert = format!(
            "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash, key_id, signature, signed_expires_at)
             SELECT operation_id, '{who}', 'token', payload_hash, '{}', decode(repeat('ab', 64), 'hex'), now() + interval '1 hour'
             FROM operations WHERE operation_id = $1",
            key.public_key().key_id()
        );
        assert_eq!(sqlstate(&api_role, &insert, &forged_op).await, "ok");
    }
    assert_eq!(sqlstate(&api_role, MARK_APPROVED, &forged_op).await, "ok");
    s.fleet.spawn_execute();
    s.fleet.ring_execute(&forged_op).await;
    refused_by_execute(&s.fleet, &forged_op).await;

    // Escalated is hands off: no claim and no reconcile path ever calls for it, however
    // often either is rung.
    s.fleet.spawn_reconcile(contract(300), fast_reconcile());
    for _ in 0..3 {
        s.fleet.ring_execute(&forged_op).await;
        let bell = Doorbell::new(fleet_tests::TENANT, &forged_op).to_bytes();
        s.fleet
            .publisher
            .publish(Queue::OperationsReconcile, &bell)
            .await
            .unwrap();
    }
    s.fleet.drained(Queue::OperationsExecute).await;
    s.fleet.drained(Queue::OperationsReconcile).await;
    // A witness the sweeper must act on: an approval window of one second. Once the
    // sweeper has cancelled it, sweeps have run over the escalated row too.
    let mut witness = intent();
    witness["approval_ttl_seconds"] = json!(1);
    s.submit(&witness).await;
    s.fleet.reaches(&op_of(&witness), Status::Cancelled).await;
    let row = s.fleet.row(&forged_op).await;
    assert_eq!(
        (row.status, row.fence, row.escalated_at.is_some()),
        (Status::Unknown, 1, true),
        "claimed once, never again"
    );
    assert_eq!(s.fleet.sim_posts(&forged_op).await, 0);
    s.stop().await;
}

#[tokio::test]
async fn a_signature_replayed_from_another_operation_is_refused_by_execute() {
    let mut s = signers().await;
    s.fleet.spawn_execute();
    // A first payment, signed by both and paid.
    let first = big_payment();
    s.submit(&first).await;
    s.both_sign(&first, in_an_hour()).await;
    s.fleet.reaches(&op_of(&first), Status::Succeeded).await;

    // The same amount to the same payee again: the API role copies the first payment's
    // signatures onto it and marks it approved.
    let second = big_payment();
    s.submit(&second).await;
    let op = op_of(&second);
    let api_role = s.fleet.sql_as_api_role().await;
    let copied = api_role
        .execute(
            "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash, key_id, signature, signed_expires_at)
             SELECT $1, a.principal, a.signed_in_with, o.payload_hash, a.key_id, a.signature, a.signed_expires_at
             FROM approvals a, operations o WHERE a.operation_id = $2 AND o.operation_id = $1",
            &[&op, &op_of(&first)],
        )
        .await
        .unwrap();
    assert_eq!(copied, 2);
    assert_eq!(sqlstate(&api_role, MARK_APPROVED, &op).await, "ok");
    s.fleet.ring_execute(&op).await;
    refused_by_execute(&s.fleet, &op).await;
    assert_eq!(s.fleet.sim_effects(&op_of(&first)).await, 1);
    s.stop().await;
}

#[tokio::test]
async fn an_expired_statement_is_refused_by_execute() {
    let mut s = signers().await;
    let (i, op) = s.big_payment_submitted().await;
    // Signed statements valid for three seconds; nothing executes meanwhile.
    let expires_at = Utc::now() + Duration::seconds(3);
    s.both_sign(&i, expires_at).await;
    let passed = "SELECT now() > max(signed_expires_at) FROM approvals WHERE operation_id = $1";
    until_true(
        &s.fleet,
        "the statements to expire by the database clock",
        passed,
        &op,
    )
    .await;
    // The approval window is still open: only the signatures have lapsed.
    s.fleet.spawn_execute();
    s.fleet.ring_execute(&op).await;
    refused_by_execute(&s.fleet, &op).await;
    s.stop().await;
}

#[tokio::test]
async fn a_signature_by_a_key_removed_after_the_approval_is_never_claimed() {
    let mut s = signers().await;
    let (i, op) = s.big_payment_submitted().await;
    s.both_sign(&i, in_an_hour()).await;
    // Bob's key is found compromised before the payment ran.
    let bob_key_id = s.bob.key.public_key().key_id().to_string();
    let removed = s
        .fleet
        .fleetctl(&["key", "remove", &bob_key_id, "--by", "security-desk"])
        .await;
    assert!(String::from_utf8_lossy(&removed.stdout).contains("removed"));
    let recorded: (Option<String>, bool) = {
        let row = s
            .fleet
            .sql()
            .await
            .query_one(
                "SELECT removed_by, removed_at IS NOT NULL FROM approver_keys WHERE key_id = $1",
                &[&bob_key_id],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(recorded, (Some("security-desk".to_owned()), true));
    never_claimed(&mut s.fleet, &op).await;
    s.stop().await;
}

#[tokio::test]
async fn a_signature_by_a_key_registered_after_the_approval_is_never_claimed() {
    let mut s = signers().await;
    let (i, op) = s.big_payment_submitted().await;
    // Approvals dated ten minutes before the keys were registered, with genuine
    // signatures, written by the schema's owner with the database's gate switched off:
    // what only a bypassed database could hold. The claim's own count still refuses them.
    let sql = s.fleet.sql().await;
    sql.batch_execute("ALTER TABLE operations DISABLE TRIGGER operations_approved_by_quorum")
        .await
        .unwrap();
    let expires_at = in_an_hour();
    for (who, key) in [("alice", &s.alice.key), ("bob", &s.bob.key)] {
        let body = signed_approval(&i, key, expires_at);
        let signature = fleet_core::Signature::parse(body["signature"].as_str().unwrap())
            .unwrap()
            .to_bytes()
            .to_vec();
        sql.execute(
            "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash, key_id, signature, signed_expires_at, at)
             SELECT operation_id, $2, 'token', payload_hash, $3, $4, $5::text::timestamptz, now() - interval '10 minutes'
             FROM operations WHERE operation_id = $1",
            &[&op, &who, &body["key_id"].as_str().unwrap(), &signature, &body["expires_at"].as_str().unwrap()],
        )
        .await
        .unwrap();
    }
    sql.execute(MARK_APPROVED, &[&op]).await.unwrap();
    sql.batch_execute("ALTER TABLE operations ENABLE TRIGGER operations_approved_by_quorum")
        .await
        .unwrap();
    never_claimed(&mut s.fleet, &op).await;
    s.stop().await;
}

#[tokio::test]
async fn signatures_required_cannot_be_changed_after_intake() {
    let s = signers().await;
    let i = big_payment();
    s.submit(&i).await;
    let sql = s.fleet.sql().await;
    let refused = sql
        .execute(
            "UPDATE operations SET signatures_required = 0 WHERE operation_id = $1",
            &[&op_of(&i)],
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code().unwrap().code(), "23000");
    s.stop().await;
}

#[tokio::test]
async fn an_approval_after_the_window_closed_is_told_it_expired_signed_or_not() {
    let s = signers().await;
    let mut i = big_payment();
    i["approval_ttl_seconds"] = json!(1);
    s.submit(&i).await;
    let op = op_of(&i);
    let closed = "SELECT now() >= approval_expires_at FROM operations WHERE operation_id = $1";
    until_true(
        &s.fleet,
        "the approval window to close by the database clock",
        closed,
        &op,
    )
    .await;
    // What the approver needs to hear is that it is too late, not that a signature is
    // missing: no signature would help.
    let (status, body) = s
        .approve(&s.alice.token, &i, json!({"payload_hash": hash_of(&i)}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("approval_expired")),
        "{body}"
    );
    s.stop().await;
}
