//! The quorum rule is written twice: in SQL (`fleet_quorum_count` and `fleet_quorum_met`,
//! migrations/0055_live_approvers.sql: the approval trigger, the approve statement and the
//! claim) and in Rust (`fleet_core::live_quorum`: execute's re-check). This table test
//! writes the same cases into a real database and into the Rust rule's inputs (approvers
//! of every role, removed or not, granted the tenant before or after their approval, of
//! another tenant only, their approvals void or not, of the stored hash or not, by the
//! submitter, signed by their own live key, a removed one, one registered after, or
//! another's) and asserts that both count the same and agree on whether the quorum is met.

use chrono::{DateTime, Duration, DurationRound, Utc};
use fleet_core::live_quorum::{
    live_quorum, ApprovalFacts, ApproverStanding, KeyStanding, QuorumSubject,
};
use fleet_core::{ApproverKey, Role};
use fleet_tests::{intent, TestFleet};

const TENANT: &str = "org_482";
const OTHER_HASH: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// One approver of a case, by the choices that decide whether they count.
#[derive(Debug, Clone, Copy)]
struct Approver {
    role: Role,
    removed: bool,
    /// Minutes after the start when the tenant was granted (`None`: another tenant only).
    granted: Option<i64>,
    voided: bool,
    stored_hash: bool,
    submitter: bool,
    key: KeyChoice,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum KeyChoice {
    Unsigned,
    OwnLive,
    OwnRemoved,
    OwnRegisteredAfter,
    Another,
}

const ROLES: [Role; 4] = [Role::Agent, Role::Approver, Role::Operator, Role::Admin];
const KEYS: [KeyChoice; 5] = [
    KeyChoice::Unsigned,
    KeyChoice::OwnLive,
    KeyChoice::OwnRemoved,
    KeyChoice::OwnRegisteredAfter,
    KeyChoice::Another,
];
/// Approvals are recorded at minute 10.
const APPROVED_AT: i64 = 10;

/// A deterministic spread of approvers over the choices: index `n` picks each choice by
/// its own digit, with live, plainly counting approvers made common so quorums are met.
fn approver(n: usize) -> Approver {
    let plain = n.is_multiple_of(3);
    Approver {
        role: if plain { Role::Approver } else { ROLES[n % 4] },
        removed: !plain && n % 7 == 1,
        granted: match (plain, n % 5) {
            (true, _) | (false, 0 | 1) => Some(0),
            (false, 2) => Some(20),
            (false, 3) => Some(APPROVED_AT),
            _ => None,
        },
        voided: !plain && n % 11 == 2,
        stored_hash: plain || n % 13 != 3,
        submitter: !plain && n % 17 == 4,
        key: KEYS[(n / 2) % 5],
    }
}

fn minute(start: DateTime<Utc>, m: i64) -> DateTime<Utc> {
    start + Duration::minutes(m)
}

#[tokio::test]
async fn the_database_and_core_count_every_case_of_the_quorum_alike() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    // The writes below are what no door makes: the rule's cases, set down by the owner.
    sql.batch_execute("ALTER TABLE approvals DISABLE TRIGGER approvals_of_a_pending_snapshot")
        .await
        .unwrap();
    // Keys of any role at any time, unsigned: kept as registrations from before they were
    // signed (the quorum rule reads none of that).
    sql.batch_execute(
        "ALTER TABLE approver_keys DISABLE TRIGGER approver_keys_registration_signed",
    )
    .await
    .unwrap();
    let start = (Utc::now() - Duration::hours(1))
        .duration_trunc(Duration::seconds(1))
        .unwrap();
    let (mut met_seen, mut unmet_seen, mut next) = (0, 0, 0usize);
    for case in 0..60usize {
        let size = 1 + case % 4;
        let people: Vec<(String, Approver)> = (0..size)
            .map(|k| {
                next += 1;
                (format!("p{case}x{k}"), approver(next * 7 + case))
            })
            .collect();
        let submitter = people
            .iter()
            .find(|(_, a)| a.submitter)
            .map(|(name, _)| name.clone())
            .unwrap_or_else(|| "billing-bot".to_owned());
        let required = 1 + (case % 3) as i16;
        let signed_required = (case % 4) as i16 % (required + 1);
        let op = fleet
            .stored_with_quorum(&intent(), required, Some(&submitter))
            .await;
        sql.execute(
            "ALTER TABLE operations DISABLE TRIGGER operations_signatures_required_immutable",
            &[],
        )
        .await
        .ok();
        sql.execute(
            "UPDATE operations SET signatures_required = $2 WHERE operation_id = $1",
            &[&op, &signed_required],
        )
        .await
        .unwrap();
        sql.execute(
            "ALTER TABLE operations ENABLE TRIGGER operations_signatures_required_immutable",
            &[],
        )
        .await
        .unwrap();
        let hash: String = fleet.row(&op).await.payload_hash.as_str().to_owned();

        let (mut approvals, mut standings, mut keys) = (Vec::new(), Vec::new(), Vec::new());
        for (name, a) in &people {
            let removed_at = a.removed.then(|| minute(start, 30));
            sql.execute(
                "INSERT INTO principals (name, role, removed_at) VALUES ($1, $2, $3)",
                &[name, &a.role.as_str(), &removed_at],
            )
            .await
            .unwrap();
            let (tenant, granted_at) = match a.granted {
                Some(m) => (TENANT, minute(start, m)),
                None => ("org_999", minute(start, 0)),
            };
            sql.execute(
                "INSERT INTO principal_tenants (principal, tenant_id, granted_at) VALUES ($1, $2, $3)",
                &[name, &tenant, &granted_at],
            )
            .await
            .unwrap();
            standings.push(ApproverStanding {
                principal: name.clone(),
                role: a.role,
                removed: a.removed,
                tenant_granted_at: a.granted.map(|m| minute(start, m)),
            });
            // The key the approval names: its owner, registration and removal.
            let seed = {
                let mut seed = [0u8; 32];
                seed[..8].copy_from_slice(&(next as u64 * 1000 + keys.len() as u64).to_le_bytes());
                seed[8..16].copy_from_slice(&(case as u64).to_le_bytes());
                seed
            };
            let key_id = if a.key == KeyChoice::Unsigned {
                None
            } else {
                let public = ApproverKey::from_seed(seed).public_key();
                let owner = if a.key == KeyChoice::Another {
                    "approver"
                } else {
                    name.as_str()
                };
                let registered = if a.key == KeyChoice::OwnRegisteredAfter {
                    minute(start, APPROVED_AT + 1)
                } else {
                    minute(start, 1)
                };
                let removed = a.key == KeyChoice::OwnRemoved;
                let key_id = public.key_id().as_str().to_owned();
                sql.execute(
                    "INSERT INTO approver_keys (key_id, principal, algorithm, public_key, registered_at, registered_by,
                                                removed_at, removed_by, removed_as, registration_legacy)
                     VALUES ($1, $2, 'ed25519', $3, $4, 'table test',
                             CASE WHEN $5 THEN $4::timestamptz + interval '1 hour' END, CASE WHEN $5 THEN 'table test' END,
                             CASE WHEN $5 THEN 'table test' END, true)",
                    &[&key_id, &owner, &public.to_stored_bytes(), &registered, &removed],
                )
                .await
                .unwrap();
                keys.push(KeyStanding {
                    key_id: key_id.clone(),
                    principal: owner.to_owned(),
                    registered_at: registered,
                    removed,
                });
                Some(key_id)
            };
            let approval_hash = if a.stored_hash {
                hash.as_str()
            } else {
                OTHER_HASH
            };
            let at = minute(start, APPROVED_AT);
            sql.execute(
                "INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, at,
                                        key_id, signature, signed_expires_at, voided_at, voided_reason)
                 VALUES ($1, $2, $3, 'token', $4, $5, $6, CASE WHEN $6::text IS NOT NULL THEN decode(repeat('ab', 64), 'hex') END,
                         CASE WHEN $6::text IS NOT NULL THEN $5::timestamptz + interval '1 hour' END,
                         CASE WHEN $7 THEN $5::timestamptz END, CASE WHEN $7 THEN 'approver_removed' END)",
                &[&op, &TENANT, name, &approval_hash, &at, &key_id, &a.voided],
            )
            .await
            .unwrap();
            approvals.push(ApprovalFacts {
                principal: name.clone(),
                payload_hash: approval_hash.to_owned(),
                at,
                key_id,
                voided: a.voided,
            });
        }

        let subject = QuorumSubject {
            tenant_id: TENANT,
            payload_hash: &hash,
            submitted_by: Some(&submitter),
            approvals_required: required,
            signatures_required: signed_required,
        };
        let core = live_quorum(&subject, &approvals, &standings, &keys);
        let row = sql
            .query_one(
                "SELECT q.counted, q.signed, fleet_quorum_met($1, $2)
                 FROM fleet_quorum_count($1, $2) q",
                &[&op, &TENANT],
            )
            .await
            .unwrap();
        let (counted, signed, met): (i64, i64, bool) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(
            (counted, signed, met),
            (core.counted, core.signed, core.meets(&subject)),
            "case {case}: {people:?}, {required} required, {signed_required} signed"
        );
        if met {
            met_seen += 1;
        } else {
            unmet_seen += 1;
        }
    }
    // The cases reach both answers, so agreeing is not agreeing on one.
    assert!(
        met_seen > 5 && unmet_seen > 5,
        "{met_seen} met, {unmet_seen} not"
    );
    sql.batch_execute("ALTER TABLE approvals ENABLE TRIGGER approvals_of_a_pending_snapshot")
        .await
        .unwrap();
    fleet.stop().await;
}
