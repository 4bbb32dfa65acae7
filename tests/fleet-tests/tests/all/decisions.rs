//! People's decisions over HTTP, with fleet-api and fleet-execute as real processes:
//! approval by an approver of the operation's tenant, never by the principal that
//! submitted it; quorum by policy (a KZT payment of 1,000,000.00 or more needs two
//! distinct approvers); refusals for the wrong role (403), another tenant (404) and a hash
//! that is not the stored snapshot's (409), also from an approver who approved before and
//! after the quorum; no approval of a rejected, cancelled or expired operation, even from
//! its approver; rejection; operators resolving and disputing;
//! `fleetctl` deciding through the API with its token; an intent whose policy version has
//! no policy refused at intake; and the approval gauges reconcile computes.

use chrono::{DateTime, Duration, Utc};
use fleet_broker::Queue;
use fleet_core::{ApprovalStatus, ApproverKey, Role, Status};
use fleet_tests::{
    admin_url_of, eventually, hash_of, intent, op_of, scrape_gauge, signed_approval, with_amount,
    ApiProcess, TestFleet, WorkerProcess,
};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio_postgres::types::FromSqlOwned;

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";

/// A fleet with the API and an execute worker as processes, and a principal of each kind.
struct Desk {
    fleet: TestFleet,
    api: ApiProcess,
    _execute: WorkerProcess,
    /// The agent that submits (`billing-bot`).
    agent: String,
    /// Two approvers of the tenant (`alice`, `bob`).
    alice: String,
    bob: String,
    /// An approver of another tenant.
    mallory: String,
    /// An operator of the tenant (`dana`).
    dana: String,
}

async fn desk() -> Desk {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let execute = fleet.spawn_process("fleet-execute", &[]);
    Desk {
        agent: fleet.token("billing-bot", Role::Agent, &[TENANT]).await,
        alice: fleet.token("alice", Role::Approver, &[TENANT]).await,
        bob: fleet.token("bob", Role::Approver, &[TENANT]).await,
        mallory: fleet
            .token("mallory", Role::Approver, &[OTHER_TENANT])
            .await,
        dana: fleet.token("dana", Role::Operator, &[TENANT]).await,
        fleet,
        api,
        _execute: execute,
    }
}

impl Desk {
    /// Submits as the agent; the intent must be stored.
    async fn submit(&self, i: &Value) -> Value {
        self.api.submitted(&self.fleet.http, &self.agent, i).await
    }

    /// Submits `i` as the agent: `i` and its operation's id.
    async fn pending(&self, i: Value) -> (Value, String) {
        self.submit(&i).await;
        let op = op_of(&i);
        (i, op)
    }

    /// `POST /v1/operations/{op}/{what}` as the bearer of `token`: (status, body).
    async fn decide(&self, token: &str, op: &str, what: &str, body: Value) -> (StatusCode, Value) {
        let path = format!("/v1/operations/{op}/{what}");
        let response = self.api.post(&self.fleet.http, token, &path, &body).await;
        (response.status(), response.json().await.unwrap())
    }

    async fn approve(&self, token: &str, i: &Value) -> (StatusCode, Value) {
        self.decide(token, &op_of(i), "approve", hash_body(i)).await
    }

    /// Approves `i` as the bearer of `token`, signed with `key`.
    async fn approve_signed(
        &self,
        token: &str,
        i: &Value,
        key: &ApproverKey,
        expires_at: DateTime<Utc>,
    ) -> (StatusCode, Value) {
        let signed = signed_approval(i, key, expires_at);
        self.decide(token, &op_of(i), "approve", signed).await
    }

    /// Submits `i` (an amount for two approvers) and has alice approve it, signed: 1 of 2.
    async fn submitted_with_one_approval(
        &self,
        i: &Value,
        alice_key: &ApproverKey,
        expires_at: DateTime<Utc>,
    ) -> String {
        self.submit(i).await;
        let (status, view) = self
            .approve_signed(&self.alice, i, alice_key, expires_at)
            .await;
        assert_eq!(status, StatusCode::OK, "1 of 2: {view}");
        op_of(i)
    }

    /// alice's and bob's registered keys, for amounts whose approvals must be signed.
    async fn signing_keys(&self) -> (ApproverKey, ApproverKey) {
        (
            self.fleet.register_key("alice").await,
            self.fleet.register_key("bob").await,
        )
    }

    /// A decision that must be refused with `status` and the error `code`.
    async fn refused(
        &self,
        token: &str,
        op: &str,
        what: &str,
        body: Value,
        (status, error): (StatusCode, &str),
    ) {
        let (got, answer) = self.decide(token, op, what, body).await;
        assert_eq!((got, code(&answer)), (status, error), "{what}: {answer}");
    }

    /// A decision that must be refused as malformed (422), naming `field`.
    async fn malformed(&self, token: &str, op: &str, what: &str, body: Value, field: &str) {
        let (status, answer) = self.decide(token, op, what, body).await;
        assert_eq!(
            (status, answer["error"]["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{what}: {answer}"
        );
    }

    /// Waits (long-poll) until the operation is final, as the agent sees it.
    async fn final_view(&self, op: &str) -> Value {
        let path = format!("/v1/operations/{op}?wait_for=final&timeout_s=30");
        let response = self
            .fleet
            .http
            .get(self.api.url(&path))
            .bearer_auth(&self.agent)
            .send()
            .await
            .unwrap();
        let view: Value = response.json().await.unwrap();
        assert!(
            ["succeeded", "failed", "cancelled", "disputed"]
                .contains(&view["status"].as_str().unwrap()),
            "not final within the wait: {view}"
        );
        view
    }

    async fn approvals(&self, op: &str) -> Vec<(String, String, String)> {
        self.triples(
            "SELECT principal, signed_in_with, payload_hash FROM approvals WHERE operation_id = $1 ORDER BY at",
            op,
        )
        .await
    }

    /// (kind, actor, signed_in_with) of the operation's history rows written by people.
    async fn decisions(&self, op: &str) -> Vec<(String, String, Option<String>)> {
        self.triples(
            "SELECT kind, actor, signed_in_with FROM operation_events
             WHERE operation_id = $1 AND (actor LIKE 'approver:%' OR actor LIKE 'operator:%') ORDER BY id",
            op,
        )
        .await
    }

    /// The three columns of the rows `sql` selects for the operation `$1`.
    async fn triples<T: FromSqlOwned>(&self, sql: &str, op: &str) -> Vec<(String, String, T)> {
        let rows = self.fleet.sql().await.query(sql, &[&op]).await.unwrap();
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    }

    /// The operation, approved through the API by alice, made `unknown` by the provider
    /// answering 500 after committing it.
    async fn unknown_operation(&self) -> String {
        self.fleet
            .sim_fault(
                json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
            )
            .await;
        let i = intent();
        self.submit(&i).await;
        assert_eq!(self.approve(&self.alice, &i).await.0, StatusCode::OK);
        self.fleet.reaches(&op_of(&i), Status::Unknown).await;
        op_of(&i)
    }

    async fn stop(self) {
        self.fleet.stop().await;
    }
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// A history row written by `actor`, signed in with a token.
fn signed_in_by_token(kind: &str, actor: &str) -> (String, String, Option<String>) {
    (kind.to_owned(), actor.to_owned(), Some("token".to_owned()))
}

/// `{"payload_hash": …}` for `i`'s snapshot.
fn hash_body(i: &Value) -> Value {
    json!({"payload_hash": hash_of(i)})
}

const FORBIDDEN_ROLE: (StatusCode, &str) = (StatusCode::FORBIDDEN, "role_not_allowed");
const NOT_PENDING: (StatusCode, &str) = (StatusCode::CONFLICT, "not_pending");
const HASH_MISMATCH: (StatusCode, &str) = (StatusCode::CONFLICT, "hash_mismatch");

#[tokio::test]
async fn an_approver_approves_over_http_and_the_payment_succeeds_once() {
    let d = desk().await;
    let i = intent();
    let op = op_of(&i);
    let prepared = d.submit(&i).await;
    assert_eq!(
        (
            prepared["approvals_required"].as_i64(),
            prepared["approvals_received"].as_i64()
        ),
        (Some(1), Some(0)),
        "the seed's 12,500.00 KZT needs one approver"
    );

    let (status, view) = d.approve(&d.alice, &i).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["approval_status"], "approved");
    assert_eq!(
        (
            view["approvals_received"].as_i64(),
            view["approvals_required"].as_i64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(view["decided_by"], "alice");
    let done = d.final_view(&op).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(d.fleet.sim_effects(&op).await, 1);

    // Approving again is the same answer and changes nothing.
    let (status, again) = d.approve(&d.alice, &i).await;
    assert_eq!(
        (status, again["approvals_received"].as_i64()),
        (StatusCode::OK, Some(1))
    );
    assert_eq!(
        d.approvals(&op).await,
        [("alice".to_owned(), "token".to_owned(), hash_of(&i))],
        "one approval, with who approved, how they signed in and the hash they saw"
    );
    assert_eq!(
        d.decisions(&op).await,
        [signed_in_by_token("approved", "approver:alice")]
    );
    d.fleet.drained(Queue::OperationsExecute).await;
    assert_eq!(d.fleet.sim_effects(&op).await, 1, "still one payment");
    d.stop().await;
}

#[tokio::test]
async fn the_submitting_principal_is_refused_even_when_it_holds_the_approver_role() {
    let d = desk().await;
    let (i, op) = d.pending(intent()).await;
    // As the agent it is: refused by its role.
    d.refused(&d.agent, &op, "approve", hash_body(&i), FORBIDDEN_ROLE)
        .await;
    // The same principal made an approver (its tenants unchanged): still never its own.
    d.fleet
        .sql()
        .await
        .execute(
            "UPDATE principals SET role = 'approver' WHERE name = 'billing-bot'",
            &[],
        )
        .await
        .unwrap();
    let cannot = (StatusCode::FORBIDDEN, "submitter_cannot_approve");
    d.refused(&d.agent, &op, "approve", hash_body(&i), cannot)
        .await;
    assert!(d.approvals(&op).await.is_empty(), "nothing recorded");
    // Another approver of the tenant may.
    assert_eq!(d.approve(&d.bob, &i).await.0, StatusCode::OK);
    assert_eq!(d.final_view(&op).await["status"], "succeeded");
    d.stop().await;
}

#[tokio::test]
async fn an_agent_token_is_refused_every_decision_with_403() {
    let d = desk().await;
    let (i, op) = d.pending(intent()).await;
    for (what, body) in [
        ("approve", hash_body(&i)),
        ("reject", json!({"reason": "no"})),
        ("resolve", json!({"outcome": "failed", "evidence": "no"})),
        ("dispute", json!({"reason": "no"})),
    ] {
        d.refused(&d.agent, &op, what, body, FORBIDDEN_ROLE).await;
    }
    let row = d.fleet.row(&op).await;
    assert_eq!(
        (row.status, row.approval_status),
        (Status::NotStarted, ApprovalStatus::Pending)
    );
    assert!(d.decisions(&op).await.is_empty());
    d.stop().await;
}

#[tokio::test]
async fn another_tenants_approver_gets_404_exactly_like_a_missing_operation() {
    let d = desk().await;
    let (i, op) = d.pending(intent()).await;
    let (status, theirs) = d.approve(&d.mallory, &i).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let missing = format!("op_{}", ulid::Ulid::new());
    let (status, nothing) = d
        .decide(&d.mallory, &missing, "approve", hash_body(&i))
        .await;
    // The same answer but for the id each answer gives its own request.
    let without_request_id = |mut body: Value| {
        body.as_object_mut().map(|b| b.remove("request_id"));
        body
    };
    assert_eq!(
        (status, without_request_id(nothing)),
        (StatusCode::NOT_FOUND, without_request_id(theirs.clone())),
        "the same answer"
    );
    assert_eq!(code(&theirs), "not_found");
    let (status, _) = d
        .decide(&d.mallory, &op, "reject", json!({"reason": "not mine"}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(d.approvals(&op).await.is_empty());
    assert_eq!(
        d.fleet.row(&op).await.approval_status,
        ApprovalStatus::Pending
    );
    d.stop().await;
}

#[tokio::test]
async fn a_hash_that_is_not_the_pending_snapshots_is_409_and_records_nothing() {
    let d = desk().await;
    let (i, op) = d.pending(intent()).await;
    let other = hash_of(&with_amount(intent(), json!(1)));
    let mismatch = json!({"payload_hash": other});
    d.refused(&d.alice, &op, "approve", mismatch, HASH_MISMATCH)
        .await;
    let misnamed = json!({"hash": hash_of(&i)});
    let malformed = (StatusCode::UNPROCESSABLE_ENTITY, "malformed");
    d.refused(&d.alice, &op, "approve", misnamed, malformed)
        .await;
    assert!(d.approvals(&op).await.is_empty());
    let row = d.fleet.row(&op).await;
    assert_eq!(
        (row.approval_status, row.approved_hash),
        (ApprovalStatus::Pending, None)
    );
    d.stop().await;
}

/// `{"payload_hash": …}` for a snapshot other than `i`'s: the same intent with another
/// amount.
fn another_hash(i: &Value) -> Value {
    let mut other = i.clone();
    other["payload"]["amount_minor"] = json!(1);
    json!({"payload_hash": hash_of(&other)})
}

#[tokio::test]
async fn a_repeated_approval_with_another_hash_is_409_before_and_after_the_quorum() {
    let d = desk().await;
    // 1,000,000.00 KZT and above: two approvers, both signing.
    let (alice_key, bob_key) = d.signing_keys().await;
    let expires_at = Utc::now() + Duration::hours(1);
    let carol = d.fleet.token("carol", Role::Approver, &[TENANT]).await;
    // Two approvers.
    let (i, op) = d.pending(with_amount(intent(), json!(120_000_000))).await;
    let (status, _) = d.approve_signed(&d.alice, &i, &alice_key, expires_at).await;
    assert_eq!(status, StatusCode::OK, "1 of 2");

    // alice approved the right hash; another hash from her is still a mismatch, not 200.
    d.refused(&d.alice, &op, "approve", another_hash(&i), HASH_MISMATCH)
        .await;
    // Her very approval again is the first answer again.
    let (status, again) = d.approve_signed(&d.alice, &i, &alice_key, expires_at).await;
    assert_eq!(
        (status, again["approvals_received"].as_i64()),
        (StatusCode::OK, Some(1))
    );

    let (status, _) = d.approve_signed(&d.bob, &i, &bob_key, expires_at).await;
    assert_eq!(status, StatusCode::OK, "2 of 2");
    assert_eq!(d.final_view(&op).await["status"], "succeeded");
    // Approved and done: another hash is refused whoever sends it.
    for token in [&d.alice, &d.bob, &carol] {
        d.refused(token, &op, "approve", another_hash(&i), HASH_MISMATCH)
            .await;
    }
    // The right hash: 200 for the two who approved it, not for a third approver.
    for (token, key) in [(&d.alice, &alice_key), (&d.bob, &bob_key)] {
        let (status, view) = d.approve_signed(token, &i, key, expires_at).await;
        assert_eq!(
            (status, view["approvals_received"].as_i64()),
            (StatusCode::OK, Some(2)),
            "{view}"
        );
    }
    d.refused(&carol, &op, "approve", hash_body(&i), NOT_PENDING)
        .await;
    assert_eq!(
        d.approvals(&op).await,
        [
            ("alice".to_owned(), "token".to_owned(), hash_of(&i)),
            ("bob".to_owned(), "token".to_owned(), hash_of(&i)),
        ],
        "nothing but the two approvals recorded"
    );
    assert_eq!(d.fleet.sim_effects(&op).await, 1);
    d.stop().await;
}

#[tokio::test]
async fn an_approval_of_a_rejected_cancelled_or_expired_operation_is_409_even_from_its_approver() {
    let d = desk().await;
    // 1,000,000.00 KZT and above: two approvers, both signing.
    let (alice_key, bob_key) = d.signing_keys().await;
    let expires_at = Utc::now() + Duration::hours(1);
    // Rejected after alice's approval (1 of 2): her approval again is refused, whatever hash.
    let rejected = with_amount(intent(), json!(150_000_000));
    let op = d
        .submitted_with_one_approval(&rejected, &alice_key, expires_at)
        .await;
    let (status, _) = d
        .decide(&d.bob, &op, "reject", json!({"reason": "wrong payee"}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let signed = signed_approval(&rejected, &alice_key, expires_at);
    d.refused(&d.alice, &op, "approve", signed, NOT_PENDING)
        .await;
    d.refused(
        &d.alice,
        &op,
        "approve",
        another_hash(&rejected),
        NOT_PENDING,
    )
    .await;

    // Cancelled by the agent's correction after alice's approval (1 of 2).
    let replaced = with_amount(intent(), json!(150_000_000));
    let old = d
        .submitted_with_one_approval(&replaced, &alice_key, expires_at)
        .await;
    let mut correction = with_amount(intent(), json!(160_000_000));
    correction["supersedes"] = json!(old);
    d.submit(&correction).await;
    let signed = signed_approval(&replaced, &alice_key, expires_at);
    d.refused(&d.alice, &old, "approve", signed, NOT_PENDING)
        .await;

    // Expired after alice's approval (1 of 2): the window closed before the quorum.
    let late = with_amount(intent(), json!(150_000_000));
    let expired = d
        .submitted_with_one_approval(&late, &alice_key, expires_at)
        .await;
    d.fleet
        .sql()
        .await
        .execute(
            "UPDATE operations SET approval_expires_at = now() - interval '1 second' WHERE operation_id = $1",
            &[&expired],
        )
        .await
        .unwrap();
    for (token, key) in [(&d.alice, &alice_key), (&d.bob, &bob_key)] {
        let signed = signed_approval(&late, key, expires_at);
        let expired_answer = (StatusCode::CONFLICT, "approval_expired");
        d.refused(token, &expired, "approve", signed, expired_answer)
            .await;
    }

    for (op, approval) in [
        (&op, ApprovalStatus::Rejected),
        (&old, ApprovalStatus::Pending),
        (&expired, ApprovalStatus::Expired),
    ] {
        let row = d.fleet.row(op).await;
        assert_eq!(row.approval_status, approval, "{op}");
        assert_ne!(row.status, Status::InProgress, "{op}");
        assert_eq!(d.approvals(op).await.len(), 1, "only alice's first: {op}");
        assert_eq!(d.fleet.sim_posts(op).await, 0, "{op}");
    }
    d.stop().await;
}

#[tokio::test]
async fn a_kzt_payment_of_a_million_or_more_needs_two_distinct_approvers() {
    let d = desk().await;
    // Each of their approvals must also be signed (payments-v3; signed_approvals.rs).
    let (alice_key, bob_key) = d.signing_keys().await;
    let i = with_amount(intent(), json!(100_000_000)); // 1,000,000.00 KZT
    let expires_at = Utc::now() + Duration::hours(1);
    let signed = |key| signed_approval(&i, key, expires_at);
    let op = op_of(&i);
    let prepared = d.submit(&i).await;
    assert_eq!(prepared["approvals_required"], 2);

    let (status, first) = d.decide(&d.alice, &op, "approve", signed(&alice_key)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            first["approval_status"].as_str(),
            first["approvals_received"].as_i64(),
            first["approvals_required"].as_i64()
        ),
        (Some("pending"), Some(1), Some(2)),
        "1 of 2: {first}"
    );
    // The same approver again is not a second approval.
    let (status, again) = d.decide(&d.alice, &op, "approve", signed(&alice_key)).await;
    assert_eq!(
        (
            status,
            again["approval_status"].as_str(),
            again["approvals_received"].as_i64()
        ),
        (StatusCode::OK, Some("pending"), Some(1))
    );
    assert_eq!(d.approvals(&op).await.len(), 1);
    let row = d.fleet.row(&op).await;
    assert_eq!(
        (row.status, row.fence),
        (Status::NotStarted, 0),
        "nothing ran on one approval"
    );
    assert_eq!(d.fleet.sim_posts(&op).await, 0);

    let (status, second) = d.decide(&d.bob, &op, "approve", signed(&bob_key)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            second["approval_status"].as_str(),
            second["approvals_received"].as_i64(),
            second["decided_by"].as_str()
        ),
        (Some("approved"), Some(2), Some("bob"))
    );
    assert_eq!(d.final_view(&op).await["status"], "succeeded");
    assert_eq!(d.fleet.sim_effects(&op).await, 1);
    assert_eq!(
        d.decisions(&op).await,
        [
            signed_in_by_token("approval_recorded", "approver:alice"),
            signed_in_by_token("approved", "approver:bob"),
        ]
    );
    // Just below the band, one approver is enough.
    let below = with_amount(intent(), json!(99_999_999));
    assert_eq!(d.submit(&below).await["approvals_required"], 1);
    d.stop().await;
}

#[tokio::test]
async fn an_intent_whose_policy_version_has_no_policy_is_refused_at_intake() {
    let mut d = desk().await;
    // The queue: dead-lettered with the reason, nothing written.
    d.fleet.spawn_prepare();
    let mut unknown = intent();
    unknown["policy_version"] = json!("payments-v2");
    d.fleet.submit(&unknown).await;
    let dead = d.fleet.expect_dead_letters(Queue::IntentsPrepare, 1).await;
    assert_eq!(dead[0].1.as_deref(), Some("unknown_policy"));
    // The API: the same reason, naming the field.
    let response = d.api.submit(&d.fleet.http, &d.agent, &unknown).await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"],
        json!({"code": "unknown_policy", "field": "policy_version"})
    );
    // A policy that does not name the action refuses it too.
    let mut refund_under_payments = fleet_tests::refund_intent("pay_1", 100);
    refund_under_payments["policy_version"] = json!("payments-v3");
    let response = d
        .api
        .submit(&d.fleet.http, &d.agent, &refund_under_payments)
        .await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"],
        json!({"code": "unknown_policy", "field": "action"})
    );
    assert_eq!(d.fleet.count("SELECT count(*) FROM operations").await, 0);
    d.stop().await;
}

#[tokio::test]
async fn reject_over_http_cancels_records_the_approver_and_is_idempotent() {
    let d = desk().await;
    let (i, op) = d.pending(with_amount(intent(), json!(150_000_000))).await;
    // A signed approval (payments-v3 asks for them at this amount).
    let alice_key = d.fleet.register_key("alice").await;
    let signed = signed_approval(&i, &alice_key, Utc::now() + Duration::hours(1));
    assert_eq!(
        d.decide(&d.alice, &op, "approve", signed).await.0,
        StatusCode::OK,
        "1 of 2"
    );
    d.malformed(&d.bob, &op, "reject", json!({"reason": "  "}), "reason")
        .await;
    let reject = json!({"reason": "wrong beneficiary"});
    let (status, view) = d.decide(&d.bob, &op, "reject", reject.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            view["status"].as_str(),
            view["approval_status"].as_str(),
            view["decided_by"].as_str()
        ),
        (Some("cancelled"), Some("rejected"), Some("bob"))
    );
    let (status, again) = d.decide(&d.bob, &op, "reject", reject).await;
    assert_eq!((status, &again), (StatusCode::OK, &view));
    // A rejected operation is not approved by anyone any more.
    d.refused(&d.bob, &op, "approve", hash_body(&i), NOT_PENDING)
        .await;
    assert_eq!(d.fleet.sim_posts(&op).await, 0);
    d.stop().await;
}

/// Nobody approved within the window: a rejection after it is refused as expired and
/// changes nothing (the approval status stays `expired`; execute cancels the operation
/// when it next reads it). It used to reach the database, which refuses expired →
/// rejected, and was answered with an internal error.
#[tokio::test]
async fn a_rejection_of_an_expired_unstarted_operation_is_409_approval_expired_and_changes_nothing()
{
    let d = desk().await;
    let (_, op) = d.pending(intent()).await;
    // Expired as an approval after the window marks it; no bell rings for it.
    d.fleet
        .sql()
        .await
        .execute(
            "UPDATE operations SET approval_expires_at = now() - interval '1 second', approval_status = 'expired'
             WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap();
    let reject = json!({"reason": "too late to approve"});
    d.refused(
        &d.bob,
        &op,
        "reject",
        reject,
        (StatusCode::CONFLICT, "approval_expired"),
    )
    .await;
    let row = d.fleet.row(&op).await;
    assert_eq!(
        (row.status, row.approval_status, row.decided_by),
        (Status::NotStarted, ApprovalStatus::Expired, None)
    );
    d.stop().await;
}

#[tokio::test]
async fn an_operator_resolves_and_disputes_over_http_and_an_approver_is_refused() {
    let d = desk().await;
    let op = d.unknown_operation().await;
    let resolve = json!({"outcome": "succeeded", "external_id": "pay_found_by_hand", "evidence": "one payment in the provider dashboard"});
    d.refused(&d.alice, &op, "resolve", resolve.clone(), FORBIDDEN_ROLE)
        .await;
    let unfound = json!({"outcome": "succeeded", "evidence": "trust me"});
    d.malformed(&d.dana, &op, "resolve", unfound, "external_id")
        .await;
    let unheard_of = json!({"outcome": "won", "evidence": "x"});
    d.malformed(&d.dana, &op, "resolve", unheard_of, "outcome")
        .await;
    let (status, view) = d.decide(&d.dana, &op, "resolve", resolve).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(
        (view["status"].as_str(), view["external_id"].as_str()),
        (Some("succeeded"), Some("pay_found_by_hand"))
    );
    assert_eq!(
        d.decisions(&op).await.last().unwrap(),
        &signed_in_by_token("transition", "operator:dana")
    );

    let other = d.unknown_operation().await;
    let dispute = json!({"reason": "customer says charged twice"});
    d.refused(&d.alice, &other, "dispute", dispute.clone(), FORBIDDEN_ROLE)
        .await;
    let (status, view) = d.decide(&d.dana, &other, "dispute", dispute.clone()).await;
    assert_eq!(
        (status, view["status"].as_str()),
        (StatusCode::OK, Some("disputed"))
    );
    let (status, again) = d.decide(&d.dana, &other, "dispute", dispute).await;
    assert_eq!(
        (status, again["status"].as_str()),
        (StatusCode::OK, Some("disputed")),
        "a repeat changes nothing"
    );
    // A final operation is not disputed.
    let late = json!({"reason": "late"});
    let final_answer = (StatusCode::CONFLICT, "not_allowed_in_status");
    d.refused(&d.dana, &op, "dispute", late, final_answer).await;
    d.stop().await;
}

#[tokio::test]
async fn fleetctl_approve_goes_through_the_api_with_its_token() {
    let d = desk().await;
    let (i, op) = d.pending(with_amount(intent(), json!(200_000_000))).await;
    let hash = hash_of(&i);
    // 2,000,000.00 KZT needs signed approvals (payments-v3): each approver generates a key
    // pair on their machine, an administrator registers the public key, and `approve
    // --key` signs there.
    let dir = std::env::temp_dir().join(format!("fleet-keys-{}", d.fleet.name()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_of = |who: &str| dir.join(format!("{who}.key")).display().to_string();
    for who in ["alice", "bob"] {
        let printed = d
            .fleet
            .fleetctl(&["key", "generate", "--out", &key_of(who)])
            .await;
        let public = String::from_utf8_lossy(&printed.stdout).trim().to_owned();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(key_of(who)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "the private key is its owner's only");
        }
        let added = d
            .fleet
            .fleetctl(&[
                "key",
                "add",
                "--principal",
                who,
                "--public-key",
                &public,
                "--by",
                "admin",
            ])
            .await;
        assert!(String::from_utf8_lossy(&added.stdout).contains("registered ed25519:"));
    }
    let (alice_key, bob_key) = (key_of("alice"), key_of("bob"));
    let args = |key: &str| {
        [
            "approve".to_owned(),
            op.clone(),
            "--hash".to_owned(),
            hash.clone(),
            "--key".to_owned(),
            key.to_owned(),
        ]
    };
    let (alice_args, bob_args) = (args(&alice_key), args(&bob_key));
    let (alice_args, bob_args): (Vec<&str>, Vec<&str>) = (
        alice_args.iter().map(String::as_str).collect(),
        bob_args.iter().map(String::as_str).collect(),
    );
    let as_ = |token| {
        [
            ("FLEET_API_URL", d.api.base_url.as_str()),
            ("FLEET_TOKEN", token),
        ]
    };

    let refused = d.fleet.fleetctl_with(&as_(&d.agent), &alice_args).await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("role_not_allowed"), "{stderr}");
    assert!(
        !stderr.contains(&d.agent),
        "the token is never printed: {stderr}"
    );

    let first = d.fleet.fleetctl_with(&as_(&d.alice), &alice_args).await;
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // The words signed, rebuilt from the snapshot on the approver's machine.
    assert!(
        String::from_utf8_lossy(&first.stdout)
            .contains("Pay 2,000,000.00 KZT to \"Vendor 77 LLP\" (vendor_77, account KZ"),
        "{}",
        String::from_utf8_lossy(&first.stdout)
    );
    assert!(
        String::from_utf8_lossy(&first.stdout).contains("1 of 2"),
        "{}",
        String::from_utf8_lossy(&first.stdout)
    );
    let second = d.fleet.fleetctl_with(&as_(&d.bob), &bob_args).await;
    assert!(
        String::from_utf8_lossy(&second.stdout).contains("approved"),
        "{}",
        String::from_utf8_lossy(&second.stdout)
    );
    assert_eq!(d.final_view(&op).await["status"], "succeeded");
    let principals: Vec<String> = d
        .approvals(&op)
        .await
        .into_iter()
        .map(|(p, _, _)| p)
        .collect();
    assert_eq!(principals, ["alice", "bob"]);
    // No token: refused before anything is sent.
    let anonymous = d
        .fleet
        .fleetctl_with(&[("FLEET_API_URL", d.api.base_url.as_str())], &alice_args)
        .await;
    assert!(!anonymous.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
    d.stop().await;
}

#[tokio::test]
async fn reconcile_gauges_the_approvals_waiting_and_those_expiring_soon() {
    let d = desk().await;
    let reconcile = d
        .fleet
        .spawn_process("fleet-reconcile", &[("SWEEP_INTERVAL_MS", "100")]);
    let admin = admin_url_of(&reconcile).await;
    let mut soon = intent();
    soon["approval_ttl_seconds"] = json!(600);
    d.submit(&soon).await;
    d.submit(&intent()).await;
    let approved = intent();
    d.submit(&approved).await;
    d.approve(&d.alice, &approved).await;
    let http = d.fleet.http.clone();
    eventually(
        "2 approvals pending, 1 expiring within 15 minutes",
        || async {
            let pending = scrape_gauge(&http, &admin, "fleet_approvals_pending").await?;
            let expiring = scrape_gauge(&http, &admin, "fleet_approvals_expiring_soon").await?;
            (pending == 2.0 && expiring == 1.0).then_some(())
        },
    )
    .await;
    // Once decided, an approval no longer waits.
    d.decide(
        &d.alice,
        &op_of(&soon),
        "reject",
        json!({"reason": "too late in the day"}),
    )
    .await;
    eventually("1 approval pending, none expiring", || async {
        let pending = scrape_gauge(&http, &admin, "fleet_approvals_pending").await?;
        let expiring = scrape_gauge(&http, &admin, "fleet_approvals_expiring_soon").await?;
        (pending == 1.0 && expiring == 0.0).then_some(())
    })
    .await;
    drop(reconcile);
    d.stop().await;
}
