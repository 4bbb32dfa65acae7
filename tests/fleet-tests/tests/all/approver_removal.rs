//! Only live approvers of the tenant count, through the real fleet (fleet-api and
//! fleetctl as processes, execute in-process, the provider simulator over HTTP): an
//! approver removed with `fleetctl principal remove` stops counting at once (their
//! approval is voided, their keys revoked, an approved payment not yet claimed waits
//! again, with an `approval_voided` event); an approver of another tenant never counts,
//! even written straight into the database as the API's role; a row made `approved`
//! around the database's rule is never claimed; and a name added back starts with no key
//! and none of its old approvals.

use chrono::{Duration, Utc};
use fleet_core::{ApprovalStatus, ApproverKey, Role, Status};
use fleet_tests::{
    intent, mark_approved, op_of, principal_add, signed_approval, with_amount, ApiProcess,
    TestFleet,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";
const CHECK_VIOLATION: &str = "23514";

/// A fleet with the API, an agent, and three approvers of the tenant with registered keys.
struct Approvers {
    fleet: TestFleet,
    api: ApiProcess,
    agent: String,
    tokens: [String; 3],
    keys: [ApproverKey; 3],
}

const ALICE: usize = 0;
const BOB: usize = 1;
const CAROL: usize = 2;
const NAMES: [&str; 3] = ["alice", "bob", "carol"];

async fn approvers() -> Approvers {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let mut tokens = Vec::new();
    let mut keys = Vec::new();
    for name in NAMES {
        tokens.push(fleet.token(name, Role::Approver, &[TENANT]).await);
        keys.push(fleet.register_key(name).await);
    }
    Approvers {
        fleet,
        api,
        agent,
        tokens: tokens.try_into().unwrap(),
        keys: keys.try_into().unwrap(),
    }
}

/// 1,500,000.00 KZT to vendor_77: two approvers, both signed (payments-v3).
fn big_payment() -> Value {
    with_amount(intent(), json!(150_000_000))
}

impl Approvers {
    /// A [`big_payment`] submitted through the API as the agent: (intent, operation id).
    async fn submitted(&self) -> (Value, String) {
        let i = big_payment();
        self.api.submitted(&self.fleet.http, &self.agent, &i).await;
        let op = op_of(&i);
        (i, op)
    }

    /// Approver `who` approves `i` through the API, signed with `key`: (status, body).
    async fn approve_with(&self, who: usize, key: usize, i: &Value) -> (StatusCode, Value) {
        let body = signed_approval(i, &self.keys[key], Utc::now() + Duration::hours(1));
        let path = format!("/v1/operations/{}/approve", op_of(i));
        let response = self
            .api
            .post(&self.fleet.http, &self.tokens[who], &path, &body)
            .await;
        (response.status(), response.json().await.unwrap())
    }

    /// Approver `who` approves `i` with their own key; it must be recorded: the body.
    async fn approves(&self, who: usize, i: &Value) -> Value {
        let (status, body) = self.approve_with(who, who, i).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// `fleetctl principal remove <name>`: what it printed.
    async fn remove(&self, name: &str) -> String {
        let out = self.fleet.fleetctl(&["principal", "remove", name]).await;
        String::from_utf8(out.stdout).unwrap()
    }

    async fn stop(self) {
        drop(self.api);
        self.fleet.stop().await;
    }
}

/// Execute, started now and rung for `op`, claims nothing ([`TestFleet::never_claimed`]).
async fn never_claimed(fleet: &mut TestFleet, op: &str) {
    fleet.spawn_execute();
    fleet.never_claimed(op).await;
}

/// The voids of `name`'s approvals of `op`: (reason) for each void row.
async fn void_reasons(fleet: &TestFleet, op: &str, name: &str) -> Vec<Option<String>> {
    fleet_tests::first_column(
        &fleet.sql().await,
        "SELECT voided_reason FROM approvals WHERE operation_id = $1 AND principal = $2",
        &[&op, &name],
    )
    .await
}

/// The `approval_voided` outcome events of `op`: (reason in the history, the view's
/// approval_status, approvals_received).
async fn voided_events(fleet: &TestFleet, op: &str) -> Vec<(String, String, i64)> {
    let rows = fleet
        .sql()
        .await
        .query(
            "SELECT e.reason, x.data->>'approval_status', (x.data->>'approvals_received')::bigint
             FROM operation_outbox x JOIN operation_events e ON e.id = x.history_id
             WHERE x.operation_id = $1 AND x.event_type = 'approval_voided' ORDER BY x.sequence",
            &[&op],
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[tokio::test]
async fn a_removed_approvers_approval_stops_counting_and_the_payment_waits_for_another() {
    let mut s = approvers().await;
    s.fleet.spawn_execute();
    let (i, op) = s.submitted().await;
    let first = s.approves(ALICE, &i).await;
    assert_eq!(first["approvals_received"], 1, "{first}");

    let said = s.remove("alice").await;
    assert!(said.contains("1 approver key(s) revoked"), "{said}");
    assert!(said.contains("1 approval(s)"), "{said}");
    assert_eq!(
        void_reasons(&s.fleet, &op, "alice").await,
        [Some("approver_removed".to_owned())]
    );
    assert_eq!(s.fleet.live_keys("alice").await, 0);
    assert_eq!(
        voided_events(&s.fleet, &op).await,
        [("approver_removed".to_owned(), "pending".to_owned(), 0)]
    );

    // Bob's approval is now the only one that counts: 1 of 2, not paid.
    let second = s.approves(BOB, &i).await;
    assert_eq!(
        (&second["approval_status"], &second["approvals_received"]),
        (&json!("pending"), &json!(1)),
        "{second}"
    );
    never_claimed(&mut s.fleet, &op).await;

    // Another live approver completes the quorum: paid once.
    let third = s.approves(CAROL, &i).await;
    assert_eq!(third["approval_status"], "approved", "{third}");
    s.fleet.ring_execute(&op).await;
    s.fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(s.fleet.sim_effects(&op).await, 1);
    s.stop().await;
}

#[tokio::test]
async fn an_approved_payment_not_yet_claimed_goes_back_to_pending_when_an_approver_is_removed() {
    let mut s = approvers().await;
    // Execute is not running: the approved payment waits to be claimed.
    let (i, op) = s.submitted().await;
    s.approves(ALICE, &i).await;
    let approved = s.approves(BOB, &i).await;
    assert_eq!(approved["approval_status"], "approved", "{approved}");

    s.remove("bob").await;
    let row = s.fleet.row(&op).await;
    assert_eq!(
        (row.approval_status, row.approved_hash, row.decided_by),
        (ApprovalStatus::Pending, None, None)
    );
    assert_eq!(
        voided_events(&s.fleet, &op).await,
        [("approver_removed".to_owned(), "pending".to_owned(), 1)]
    );
    let back: bool = s
        .fleet
        .sql()
        .await
        .query_one(
            "SELECT (evidence->>'back_to_pending')::boolean FROM operation_events
             WHERE operation_id = $1 AND kind = 'approval_voided' AND actor = 'access'",
            &[&op],
        )
        .await
        .unwrap()
        .get(0);
    assert!(back);
    never_claimed(&mut s.fleet, &op).await;
    s.stop().await;
}

#[tokio::test]
async fn an_approver_of_another_tenant_never_counts_and_a_row_approved_around_the_rule_is_never_claimed(
) {
    let mut s = approvers().await;
    s.fleet
        .token("mallory", Role::Approver, &[OTHER_TENANT])
        .await;
    // One approver needed, not signed (store-level intake), submitted by the agent.
    let op = s
        .fleet
        .stored_with_quorum(&intent(), 1, Some("billing-bot"))
        .await;
    let api_role = s.fleet.sql_as_api_role().await;
    let insert = |who: &str| {
        format!(
            "INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash)
             SELECT operation_id, tenant_id, '{who}', 'token', payload_hash FROM operations WHERE operation_id = $1"
        )
    };
    // Neither an approver of another tenant nor an agent of this one is recorded.
    for who in ["mallory", "billing-bot"] {
        let refused = api_role.execute(&insert(who), &[&op]).await.unwrap_err();
        let db = refused.as_db_error().expect("a database refusal");
        assert_eq!(
            (db.code().code(), db.constraint()),
            (CHECK_VIOLATION, Some("approvals_of_a_pending_snapshot")),
            "{who}"
        );
    }
    // Nor may the API's role call the operation approved without a live approval.
    let refused = mark_approved(&api_role, &op, "mallory").await.unwrap_err();
    assert_eq!(
        refused.as_db_error().unwrap().constraint(),
        Some("operations_approved_by_quorum")
    );

    // The owner, with both triggers off, writes mallory's approval and the approval:
    // what only a bypassed database could hold. The claim counts again, and refuses.
    let owner = s.fleet.sql().await;
    let both_triggers = |switch: &str| {
        format!(
            "ALTER TABLE approvals {switch} TRIGGER approvals_of_a_pending_snapshot;
             ALTER TABLE operations {switch} TRIGGER operations_approved_by_quorum;"
        )
    };
    owner
        .batch_execute(&both_triggers("DISABLE"))
        .await
        .unwrap();
    owner.execute(&insert("mallory"), &[&op]).await.unwrap();
    mark_approved(&owner, &op, "mallory").await.unwrap();
    owner.batch_execute(&both_triggers("ENABLE")).await.unwrap();
    assert_eq!(
        s.fleet.row(&op).await.approval_status,
        ApprovalStatus::Approved
    );
    never_claimed(&mut s.fleet, &op).await;
    s.stop().await;
}

#[tokio::test]
async fn a_name_added_back_has_no_old_key_and_no_old_approval() {
    let s = approvers().await;
    let (i, op) = s.submitted().await;
    s.approves(ALICE, &i).await;
    s.remove("alice").await;

    // Back as an agent: no key of hers is live.
    s.fleet
        .fleetctl(&principal_add("alice", "agent", TENANT, &[]))
        .await;
    assert_eq!(s.fleet.live_keys("alice").await, 0);
    s.remove("alice").await;

    // Back as an approver, with a new token: her old approval stays void and counts for
    // nothing, and her old key signs nothing that is recorded.
    s.fleet
        .fleetctl(&principal_add("alice", "approver", TENANT, &[]))
        .await;
    assert_eq!(s.fleet.live_keys("alice").await, 0);
    assert_eq!(
        void_reasons(&s.fleet, &op, "alice").await,
        [Some("approver_removed".to_owned())]
    );
    let view = s.fleet.view_in_db(&op).await;
    assert_eq!(view["approvals_received"], 0, "{view}");
    let token = s.fleet.token("alice", Role::Approver, &[TENANT]).await;
    let body = signed_approval(&i, &s.keys[ALICE], Utc::now() + Duration::hours(1));
    let path = format!("/v1/operations/{op}/approve");
    let response = s.api.post(&s.fleet.http, &token, &path, &body).await;
    let status = response.status();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(
        (status, &answer["error"]),
        (
            StatusCode::BAD_REQUEST,
            &json!({"code": "signature_invalid", "field": "key_id"})
        )
    );
    // Nothing new was recorded for her: the one void row.
    assert_eq!(void_reasons(&s.fleet, &op, "alice").await.len(), 1);
    s.stop().await;
}
