//! Whose approval counts is the database's to say, whoever writes: through every
//! component's database role (api, prepare, execute, reconcile, webhook-ingest, relay),
//! as each connects, no statement makes an approver of another tenant count for this
//! one — not recording their approval, not granting them the tenant, not moving the
//! operation to their tenant, not rewriting an approval, not calling the operation
//! approved — nor does the API, as a process, take their approval; and an approver the
//! administrator demotes to another role, or whose tenant is withdrawn, stops counting
//! at once: their approval is voided with the reason, their keys revoked, the operation
//! pending again, and execute (running, as its own role) claims nothing until another
//! live approver completes the quorum.

use fleet_core::{ApprovalStatus, Role, Status};
use fleet_store::{ApprovalOutcome, DbRole};
use fleet_tests::{answer_of, at, decider, first_column, intent, TestFleet};
use reqwest::StatusCode;
use serde_json::json;

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";
const PERMISSION_DENIED: &str = "42501";
const CHECK_VIOLATION: &str = "23514";

/// The ways a writer could make mallory (an approver of another tenant only) count for
/// an operation of this tenant, each with what the API's role is answered when its grants
/// let the statement reach the database's rule (every other role: permission denied).
const ATTACKS: [(&str, &str, Option<&str>); 6] = [
    (
        "recording her approval",
        "INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash)
         SELECT operation_id, tenant_id, 'mallory', 'token', payload_hash FROM operations
         WHERE operation_id = $1",
        Some("approvals_of_a_pending_snapshot"),
    ),
    (
        "granting her the tenant",
        "INSERT INTO principal_tenants (principal, tenant_id)
         SELECT 'mallory', tenant_id FROM operations WHERE operation_id = $1",
        None,
    ),
    (
        "moving her grant to the tenant",
        "UPDATE principal_tenants SET tenant_id = (SELECT tenant_id FROM operations WHERE operation_id = $1)
         WHERE principal = 'mallory'",
        None,
    ),
    (
        "moving the operation to her tenant",
        "UPDATE operations SET tenant_id = 'org_999' WHERE operation_id = $1",
        None,
    ),
    (
        "rewriting an approval as hers",
        "UPDATE approvals SET principal = 'mallory' WHERE operation_id = $1",
        None,
    ),
    (
        "calling the operation approved in her name",
        "UPDATE operations SET approval_status = 'approved', approved_hash = payload_hash,
             decided_by = 'mallory', decided_at = now() WHERE operation_id = $1",
        Some("operations_approved_by_quorum"),
    ),
];

/// `name` approves `op` (its stored hash) through the store's approve, as the API does.
async fn approves(fleet: &TestFleet, op: &str, name: &str) -> ApprovalOutcome {
    let hash = fleet.row(op).await.payload_hash.as_str().to_owned();
    fleet
        .store
        .approve(at(op), &hash, &decider(name), None)
        .await
        .unwrap()
}

#[tokio::test]
async fn no_component_role_and_not_the_api_makes_another_tenants_approver_count() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    let api = fleet.spawn_api(&[]).await;
    let mallory = fleet
        .token("mallory", Role::Approver, &[OTHER_TENANT])
        .await;
    // Two approvers needed; ann (of this tenant) has approved, one short.
    let op = fleet
        .stored_with_quorum(&intent(), 2, Some("billing-bot"))
        .await;
    assert!(matches!(
        approves(&fleet, &op, "ann").await,
        ApprovalOutcome::Counted(_)
    ));

    let mut wrong = Vec::new();
    for role in DbRole::ALL {
        let client = fleet.connect_as(role).await;
        for (what, sql, api_rule) in ATTACKS {
            let expected = match (role, api_rule) {
                (DbRole::Api, Some(rule)) => (CHECK_VIOLATION.to_owned(), Some(rule.to_owned())),
                _ => (PERMISSION_DENIED.to_owned(), None),
            };
            let got = answer_of(client.execute(sql, &[&op]).await);
            if got != expected {
                wrong.push(format!(
                    "{} {what}: {got:?}, expected {expected:?}",
                    role.name()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");

    // Nor does the API take her approval: she sees no such operation.
    let hash = fleet.row(&op).await.payload_hash.as_str().to_owned();
    let response = api
        .post(
            &fleet.http,
            &mallory,
            &format!("/v1/operations/{op}/approve"),
            &json!({"payload_hash": hash}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    // Nothing of hers was written; ann's approval is the only one, and nothing ran.
    let sql = fleet.sql().await;
    let approvers: Vec<String> = first_column(
        &sql,
        "SELECT principal FROM approvals WHERE operation_id = $1",
        &[&op],
    )
    .await;
    assert_eq!(approvers, ["ann"]);
    let grants: Vec<String> = first_column(
        &sql,
        "SELECT tenant_id FROM principal_tenants WHERE principal = $1",
        &[&"mallory"],
    )
    .await;
    assert_eq!(grants, [OTHER_TENANT]);
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.tenant_id.as_str(), row.approval_status),
        (TENANT, ApprovalStatus::Pending)
    );
    fleet.never_claimed(&op).await;

    // A live approver of the tenant completes the quorum: paid once.
    assert!(matches!(
        approves(&fleet, &op, "ben").await,
        ApprovalOutcome::Approved
    ));
    fleet.ring_execute(&op).await;
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_effects(&op).await, 1);
    drop(api);
    fleet.stop().await;
}

/// The (principal, void reason) of each approval of `op`, by principal.
async fn approvals_of(fleet: &TestFleet, op: &str) -> Vec<(String, Option<String>)> {
    fleet_tests::two_columns(
        &fleet.sql().await,
        "SELECT principal, voided_reason FROM approvals WHERE operation_id = $1 ORDER BY principal",
        &[&op],
    )
    .await
}

/// The `approval_voided` history rows of `op`: (reason, the principal, back to pending).
async fn voids(fleet: &TestFleet, op: &str) -> Vec<(String, String, bool)> {
    fleet
        .sql()
        .await
        .query(
            "SELECT reason, evidence->>'principal', (evidence->>'back_to_pending')::boolean
             FROM operation_events WHERE operation_id = $1 AND kind = 'approval_voided' AND actor = 'access'
             ORDER BY id",
            &[&op],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[tokio::test]
async fn an_approver_demoted_or_withdrawn_from_the_tenant_stops_counting_before_the_claim() {
    let mut fleet = TestFleet::start().await;
    for name in ["alice", "bob", "carol"] {
        fleet.token(name, Role::Approver, &[TENANT]).await;
        fleet.register_key(name).await;
    }
    let op = fleet
        .stored_with_quorum(&intent(), 2, Some("billing-bot"))
        .await;
    assert!(matches!(
        approves(&fleet, &op, "alice").await,
        ApprovalOutcome::Counted(_)
    ));
    assert!(matches!(
        approves(&fleet, &op, "bob").await,
        ApprovalOutcome::Approved
    ));
    // Execute runs from here on, so a claim after each change would be seen.
    fleet.spawn_execute();
    let owner = fleet.sql().await;

    // The administrator makes bob an operator: his approval stops counting at once.
    owner
        .execute(
            "UPDATE principals SET role = 'operator' WHERE name = 'bob'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        approvals_of(&fleet, &op).await,
        [
            ("alice".to_owned(), None),
            ("bob".to_owned(), Some("approver_role_changed".to_owned()))
        ]
    );
    assert_eq!(fleet.live_keys("bob").await, 0);
    assert_eq!(
        fleet.row(&op).await.approval_status,
        ApprovalStatus::Pending
    );
    assert_eq!(
        voids(&fleet, &op).await,
        [("approver_role_changed".to_owned(), "bob".to_owned(), true)]
    );
    fleet.never_claimed(&op).await;

    // Carol completes the quorum again; then her grant of the tenant is withdrawn.
    assert!(matches!(
        approves(&fleet, &op, "carol").await,
        ApprovalOutcome::Approved
    ));
    owner
        .execute(
            "DELETE FROM principal_tenants WHERE principal = 'carol' AND tenant_id = $1",
            &[&TENANT],
        )
        .await
        .unwrap();
    assert_eq!(
        approvals_of(&fleet, &op).await[2],
        ("carol".to_owned(), Some("tenant_withdrawn".to_owned()))
    );
    assert_eq!(fleet.live_keys("carol").await, 0);
    assert_eq!(
        fleet.row(&op).await.approval_status,
        ApprovalStatus::Pending
    );
    assert_eq!(
        voids(&fleet, &op).await[1..],
        [("tenant_withdrawn".to_owned(), "carol".to_owned(), true)]
    );
    fleet.never_claimed(&op).await;

    // Bob made an approver again, carol granted the tenant again: neither inherits the old
    // approval or key. Alice's is the only one that counts.
    owner
        .batch_execute(
            "UPDATE principals SET role = 'approver' WHERE name = 'bob';
             INSERT INTO principal_tenants (principal, tenant_id) VALUES ('carol', 'org_482');",
        )
        .await
        .unwrap();
    assert_eq!(fleet.view_in_db(&op).await["approvals_received"], 1);
    assert_eq!(
        (fleet.live_keys("bob").await, fleet.live_keys("carol").await),
        (0, 0)
    );
    fleet.never_claimed(&op).await;
    fleet.stop().await;
}
