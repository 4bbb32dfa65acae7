//! Rules the database keeps as a second lock (whoever connects) and fleet-core keeps as
//! the one Rust source the store and the workers ask. Each test here writes the rule's
//! cases into a real database, runs them through the real SQL (the approve statement, the
//! claim's compare-and-set, the status trigger, the store's reject and dispute) and
//! through fleet-core's function, and asserts equal answers case by case:
//!
//! - the quorum: `fleet_core::live_quorum` (`LiveCount::meets`) against the approve
//!   statement's verdict and the claim's predicate;
//! - claim readiness: `fleet_core::claim_ready::ready_to_claim` against the claim;
//! - the final outcomes: `Status::is_final_outcome` against what the status trigger
//!   refuses to every role and the owner;
//! - the final statuses: `Status::is_final` against the moves the store's transition
//!   statement stamps with the time the operation became final (`resolved_at`);
//! - approve, reject and dispute: `judge_approval`, `judge_reject` and `judge_dispute`
//!   against the store's answer and the row the database keeps.
//!
//! Rows are set down with the triggers off (`session_replication_role = replica`): the
//! cases are states no door makes in this order, and the rule is asked about each.

use chrono::{DateTime, Duration, DurationRound, Utc};
use fleet_core::claim_ready::{ready_to_claim, ClaimFacts};
use fleet_core::confirmation::Confirmation;
use fleet_core::dispute::{judge_dispute, DisputeVerdict};
use fleet_core::live_quorum::{
    is_live_approver, live_quorum, ApprovalFacts, ApproverStanding, KeyStanding, QuorumSubject,
};
use fleet_core::rejection::{judge_reject, RejectAsked, RejectVerdict, REJECTED};
use fleet_core::{
    judge_approval, transition, ApprovalAsked, ApprovalStatus, ApprovalVerdict, ApproverKey, Event,
    Quorum, Role, Status,
};
use fleet_store::{
    ApprovalOutcome, Claim, DbRole, DecisionOutcome, RejectOutcome, RolePrefix, Transition,
    TransitionOutcome,
};
use fleet_tests::{at, decider, intent, TestFleet, TENANT};
use tokio_postgres::types::ToSql;
use tokio_postgres::Client;

const OTHER_HASH: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
const POLICY: &str = "payments-v3";
const LEASE_MS: i64 = 30_000;

/// Runs `statement` with every trigger off, in its own transaction.
async fn set_down(sql: &mut Client, statement: &str, params: &[&(dyn ToSql + Sync)]) {
    let tx = sql.transaction().await.unwrap();
    tx.batch_execute("SET LOCAL session_replication_role = replica")
        .await
        .unwrap();
    tx.execute(statement, params)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {:?}", e.as_db_error()));
    tx.commit().await.unwrap();
}

/// The row state a case sets down on a freshly stored operation.
#[derive(Debug, Clone, Copy)]
struct RowState {
    status: Status,
    approval: ApprovalStatus,
    escalated: bool,
    approval_expired: bool,
    /// For an approved row: its approved hash is the stored one (else another).
    approved_hash_matches: bool,
    /// For a row in progress: its lease expired.
    lease_expired: bool,
}

impl RowState {
    fn ready() -> RowState {
        RowState {
            status: Status::NotStarted,
            approval: ApprovalStatus::Approved,
            escalated: false,
            approval_expired: false,
            approved_hash_matches: true,
            lease_expired: false,
        }
    }
}

/// Stores a fresh operation (one approval required, submitted by `submitter`) and sets
/// `state` down on it: its id and stored hash.
async fn operation_in(
    fleet: &TestFleet,
    sql: &mut Client,
    state: RowState,
    submitter: &str,
) -> (String, String) {
    let op = fleet
        .stored_with_quorum(&intent(), 1, Some(submitter))
        .await;
    let hash = fleet.row(&op).await.payload_hash.as_str().to_owned();
    let approved_hash = match state.approval {
        ApprovalStatus::Approved if state.approved_hash_matches => Some(hash.as_str()),
        ApprovalStatus::Approved => Some(OTHER_HASH),
        _ => None,
    };
    let in_progress = state.status == Status::InProgress;
    set_down(
        sql,
        "UPDATE operations SET status = $2, approval_status = $3, approved_hash = $4,
             approvals_required = 1, signatures_required = 0,
             escalated_at = CASE WHEN $5 THEN now() END,
             approval_expires_at = now() + CASE WHEN $6 THEN interval '-1 minute' ELSE interval '1 hour' END,
             lease_owner = CASE WHEN $7 THEN 'execute-elsewhere' END,
             lease_expires_at = CASE WHEN $7 THEN now() + CASE WHEN $8 THEN interval '-1 minute' ELSE interval '1 minute' END END
         WHERE operation_id = $1",
        &[
            &op,
            &state.status.as_str(),
            &state.approval.as_str(),
            &approved_hash,
            &state.escalated,
            &state.approval_expired,
            &in_progress,
            &state.lease_expired,
        ],
    )
    .await;
    (op, hash)
}

/// Records `principal`'s approval of `hash` on `op` at `at`, as it stands (no trigger).
async fn approval_row(
    sql: &mut Client,
    op: &str,
    principal: &str,
    hash: &str,
    at: DateTime<Utc>,
    key_id: Option<&str>,
    voided: bool,
) {
    set_down(
        sql,
        "INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, at,
                                key_id, signature, signed_expires_at, voided_at, voided_reason)
         VALUES ($1, $2, $3, 'token', $4, $5, $6, CASE WHEN $6::text IS NOT NULL THEN decode(repeat('ab', 64), 'hex') END,
                 CASE WHEN $6::text IS NOT NULL THEN $5::timestamptz + interval '1 hour' END,
                 CASE WHEN $7 THEN $5::timestamptz END, CASE WHEN $7 THEN 'approver_removed' END)",
        &[&op, &TENANT, &principal, &hash, &at, &key_id, &voided],
    )
    .await;
}

/// One earlier approver of a quorum case, by what decides whether it counts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Live,
    LiveSigned,
    SignedByARemovedKey,
    Removed,
    /// An operator now, no longer an approver.
    Demoted,
    OtherTenantOnly,
    Submitter,
    Voided,
    OfAnotherHash,
}

const KINDS: [Kind; 9] = [
    Kind::Live,
    Kind::LiveSigned,
    Kind::SignedByARemovedKey,
    Kind::Removed,
    Kind::Demoted,
    Kind::OtherTenantOnly,
    Kind::Submitter,
    Kind::Voided,
    Kind::OfAnotherHash,
];

/// The people of one quorum case, written into the database and into core's inputs.
struct People {
    start: DateTime<Utc>,
    standings: Vec<ApproverStanding>,
    keys: Vec<KeyStanding>,
}

impl People {
    /// Adds `name` as `kind` (principal, tenant grant, key): the key id it signs with.
    async fn add(&mut self, sql: &mut Client, name: &str, kind: Kind, seed: u64) -> Option<String> {
        let role = if kind == Kind::Demoted {
            Role::Operator
        } else {
            Role::Approver
        };
        let removed = kind == Kind::Removed;
        let granted = self.start;
        let tenant = if kind == Kind::OtherTenantOnly {
            "org_999"
        } else {
            TENANT
        };
        set_down(
            sql,
            "INSERT INTO principals (name, role, removed_at) VALUES ($1, $2, CASE WHEN $3 THEN now() END)",
            &[&name, &role.as_str(), &removed],
        )
        .await;
        set_down(
            sql,
            "INSERT INTO principal_tenants (principal, tenant_id, granted_at) VALUES ($1, $2, $3)",
            &[&name, &tenant, &granted],
        )
        .await;
        self.standings.push(ApproverStanding {
            principal: name.to_owned(),
            role,
            removed,
            tenant_granted_at: (tenant == TENANT).then_some(granted),
        });
        if !matches!(kind, Kind::LiveSigned | Kind::SignedByARemovedKey) {
            return None;
        }
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let public = ApproverKey::from_seed(bytes).public_key();
        let key_id = public.key_id().as_str().to_owned();
        let registered = self.start + Duration::minutes(1);
        let key_removed = kind == Kind::SignedByARemovedKey;
        set_down(
            sql,
            "INSERT INTO approver_keys (key_id, principal, algorithm, public_key, registered_at, registered_by,
                                        removed_at, removed_by, removed_as)
             VALUES ($1, $2, 'ed25519', $3, $4, 'table test',
                     CASE WHEN $5 THEN $4::timestamptz + interval '1 hour' END, CASE WHEN $5 THEN 'table test' END,
                     CASE WHEN $5 THEN 'table test' END)",
            &[&key_id, &name, &public.to_stored_bytes(), &registered, &key_removed],
        )
        .await;
        self.keys.push(KeyStanding {
            key_id: key_id.clone(),
            principal: name.to_owned(),
            registered_at: registered,
            removed: key_removed,
        });
        Some(key_id)
    }
}

/// Keys are written here as plain rows, without a signed registration: where the schema
/// asks for one, they are marked as keys registered before registrations were signed.
/// (The quorum counts a key by its owner, registration time and removal alone.)
const KEYS_AS_PLAIN_ROWS: &str = "
DO $$ BEGIN
    IF EXISTS (SELECT FROM information_schema.columns
               WHERE table_name = 'approver_keys' AND column_name = 'registration_legacy') THEN
        ALTER TABLE approver_keys ALTER COLUMN registration_legacy SET DEFAULT true;
    END IF;
END $$";

#[tokio::test]
async fn the_approve_statement_and_the_claim_meet_the_quorum_exactly_when_core_does() {
    let fleet = TestFleet::start().await;
    let mut sql = fleet.sql().await;
    sql.batch_execute(KEYS_AS_PLAIN_ROWS).await.unwrap();
    let start = (Utc::now() - Duration::hours(1))
        .duration_trunc(Duration::seconds(1))
        .unwrap();
    let earlier = start + Duration::minutes(50);
    let mut wrong = Vec::new();
    let (mut approved_seen, mut short_seen) = (0, 0);
    for case in 0..54usize {
        let required = 1 + (case % 3) as i16;
        let signatures_required = ((case / 3) % 2) as i16;
        // Up to three earlier approvers, their kinds spread over the cases.
        let kinds: Vec<Kind> = (0..case % 4)
            .map(|k| KINDS[(case * 5 + k * 4) % KINDS.len()])
            .collect();
        let mut people = People {
            start,
            standings: Vec::new(),
            keys: Vec::new(),
        };
        let submitter = format!("q{case}submitter");
        let mut earlier_approvals = Vec::new();
        for (k, &kind) in kinds.iter().enumerate() {
            let name = if kind == Kind::Submitter {
                submitter.clone()
            } else {
                format!("q{case}p{k}")
            };
            let key_id = people
                .add(&mut sql, &name, kind, (case * 10 + k) as u64)
                .await;
            earlier_approvals.push((name, kind, key_id));
        }
        if !kinds.contains(&Kind::Submitter) {
            people.add(&mut sql, &submitter, Kind::Live, 0).await;
        }
        let last = format!("q{case}last");
        people.add(&mut sql, &last, Kind::Live, 0).await;

        // The same earlier approvals on two operations: one completed by the approve
        // statement, one set down as approved and asked for by the claim.
        let mut by_statement = None;
        for claimed in [false, true] {
            let state = if claimed {
                RowState::ready()
            } else {
                RowState {
                    approval: ApprovalStatus::Pending,
                    ..RowState::ready()
                }
            };
            let (op, hash) = operation_in(&fleet, &mut sql, state, &submitter).await;
            set_down(
                &mut sql,
                "UPDATE operations SET approvals_required = $2, signatures_required = $3 WHERE operation_id = $1",
                &[&op, &required, &signatures_required],
            )
            .await;
            let mut facts = Vec::new();
            for (name, kind, key_id) in &earlier_approvals {
                let approval_hash = if *kind == Kind::OfAnotherHash {
                    OTHER_HASH
                } else {
                    hash.as_str()
                };
                let voided = *kind == Kind::Voided;
                approval_row(
                    &mut sql,
                    &op,
                    name,
                    approval_hash,
                    earlier,
                    key_id.as_deref(),
                    voided,
                )
                .await;
                facts.push(ApprovalFacts {
                    principal: name.clone(),
                    payload_hash: approval_hash.to_owned(),
                    at: earlier,
                    key_id: key_id.clone(),
                    voided,
                });
            }
            let subject = QuorumSubject {
                tenant_id: TENANT,
                payload_hash: &hash,
                submitted_by: Some(&submitter),
                approvals_required: required,
                signatures_required,
            };
            if claimed {
                let core = live_quorum(&subject, &facts, &people.standings, &people.keys);
                let claim = fleet
                    .store
                    .claim_ready(at(&op), &[], "rule-tables", LEASE_MS)
                    .await
                    .unwrap();
                let sql_says = matches!(claim, Claim::Claimed(_));
                if sql_says != core.meets(&subject) {
                    wrong.push(format!(
                        "claim, case {case} {kinds:?}, {required} required, {signatures_required} signed: \
                         the claim says {sql_says}, core counts {core:?}"
                    ));
                }
            } else {
                let outcome = fleet
                    .store
                    .approve(at(&op), &hash, &decider(&last), None)
                    .await
                    .unwrap();
                facts.push(ApprovalFacts {
                    principal: last.clone(),
                    payload_hash: hash.clone(),
                    at: Utc::now(),
                    key_id: None,
                    voided: false,
                });
                let core = live_quorum(&subject, &facts, &people.standings, &people.keys);
                let expected = if core.meets(&subject) {
                    ApprovalOutcome::Approved
                } else {
                    ApprovalOutcome::Counted(Quorum {
                        received: core.counted,
                        required: i64::from(required),
                    })
                };
                if outcome != expected {
                    wrong.push(format!(
                        "approve, case {case} {kinds:?}, {required} required, {signatures_required} signed: \
                         the statement says {outcome:?}, core {expected:?}"
                    ));
                }
                by_statement = Some(outcome == ApprovalOutcome::Approved);
            }
        }
        match by_statement {
            Some(true) => approved_seen += 1,
            _ => short_seen += 1,
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Both answers occur, so agreeing is not agreeing on one.
    assert!(
        approved_seen > 5 && short_seen > 5,
        "{approved_seen} approved, {short_seen} short"
    );
    fleet.stop().await;
}

/// How the claim is asked for a case: without reading first (under the policies the
/// claimer accepts), or at the fence it read.
#[derive(Debug, Clone, Copy)]
enum Ask {
    Ready { policy_current: bool },
    AtFence { fence_current: bool },
}

#[tokio::test]
async fn the_claim_takes_exactly_the_rows_core_calls_ready() {
    let fleet = TestFleet::start().await;
    let mut sql = fleet.sql().await;
    let mut cases: Vec<(RowState, bool, Ask)> = Vec::new();
    // Every combination for an unstarted row.
    for approval in ApprovalStatus::ALL {
        for n in 0..32u32 {
            let bit = |b: u32| n & (1 << b) != 0;
            let state = RowState {
                status: Status::NotStarted,
                approval,
                escalated: bit(0),
                approval_expired: bit(1),
                approved_hash_matches: !bit(2),
                lease_expired: false,
            };
            let ask = Ask::Ready {
                policy_current: !bit(3),
            };
            cases.push((state, !bit(4), ask));
        }
    }
    // At the fence read, or past it.
    for fence_current in [true, false] {
        cases.push((RowState::ready(), true, Ask::AtFence { fence_current }));
    }
    // Every other status, otherwise ready; a row in progress with its lease live or lapsed.
    for status in Status::ALL.into_iter().filter(|&s| s != Status::NotStarted) {
        for lease_expired in [false, true] {
            if lease_expired && status != Status::InProgress {
                continue;
            }
            let state = RowState {
                status,
                lease_expired,
                ..RowState::ready()
            };
            cases.push((
                state,
                true,
                Ask::Ready {
                    policy_current: true,
                },
            ));
        }
    }
    let mut wrong = Vec::new();
    let mut claimed_seen = 0;
    for (state, quorum_met, ask) in &cases {
        let (op, hash) = operation_in(&fleet, &mut sql, *state, "billing-bot").await;
        if *quorum_met {
            approval_row(&mut sql, &op, "ann", &hash, Utc::now(), None, false).await;
        }
        let claim = match ask {
            Ask::Ready { policy_current } => {
                let policies = vec![if *policy_current {
                    POLICY
                } else {
                    "payments-v4"
                }
                .to_owned()];
                fleet
                    .store
                    .claim_ready(at(&op), &policies, "rule-tables", LEASE_MS)
                    .await
            }
            Ask::AtFence { fence_current } => {
                let fence = fleet.row(&op).await.fence + i64::from(!fence_current);
                fleet
                    .store
                    .claim(at(&op), fence, "rule-tables", LEASE_MS)
                    .await
            }
        }
        .unwrap();
        let facts = ClaimFacts {
            status: state.status,
            approval: state.approval,
            escalated: state.escalated,
            approval_expired: state.approval_expired,
            approved_hash_matches: state.approved_hash_matches,
            policy_current: !matches!(
                ask,
                Ask::Ready {
                    policy_current: false
                }
            ),
            fence_current: !matches!(
                ask,
                Ask::AtFence {
                    fence_current: false
                }
            ),
            approval_stands: *quorum_met,
        };
        let sql_says = matches!(claim, Claim::Claimed(_));
        claimed_seen += usize::from(sql_says);
        if sql_says != ready_to_claim(facts) {
            wrong.push(format!(
                "{facts:?} (lease expired: {}): the claim says {sql_says}",
                state.lease_expired
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(
        claimed_seen >= 2 && claimed_seen < cases.len() / 2,
        "{claimed_seen} claimed"
    );
    fleet.stop().await;
}

const NOT_IN_THE_TABLE: (&str, Option<&str>) = ("23514", Some("operations_status_transition"));

/// What the database answers to moving `op` to `to`, in a transaction rolled back.
async fn answer_to_move(client: &mut Client, op: &str, to: Status) -> (String, Option<String>) {
    let tx = client.transaction().await.unwrap();
    let answer = fleet_tests::answer_of(
        tx.execute(
            "UPDATE operations SET status = $2 WHERE operation_id = $1",
            &[&op, &to.as_str()],
        )
        .await,
    );
    tx.rollback().await.unwrap();
    answer
}

#[tokio::test]
async fn the_statuses_no_role_may_leave_are_core_s_final_outcomes() {
    let fleet = TestFleet::start().await;
    let mut sql = fleet.sql().await;
    let mut ops = Vec::new();
    for status in Status::ALL {
        let state = RowState {
            status,
            ..RowState::ready()
        };
        ops.push((
            status,
            operation_in(&fleet, &mut sql, state, "billing-bot").await.0,
        ));
    }
    let prefix = RolePrefix::of(&fleet.database_url).unwrap();
    let mut writers = vec![("owner".to_owned(), fleet.sql().await)];
    for role in DbRole::ALL {
        let writes: bool = sql
            .query_one(
                "SELECT has_column_privilege($1, 'operations', 'status', 'UPDATE')",
                &[&role.login_name(&prefix)],
            )
            .await
            .unwrap()
            .get(0);
        if writes {
            writers.push((role.name().to_owned(), fleet.connect_as(role).await));
        }
    }
    assert!(writers.len() >= 4, "the roles that write a status");
    let mut wrong = Vec::new();
    for (from, op) in &ops {
        // Left by nobody: every writer is refused every other status as no move of the
        // state table (not merely as someone else's decision).
        let mut left_by_nobody = true;
        for (writer, client) in &mut writers {
            for to in Status::ALL.into_iter().filter(|s| s != from) {
                let answer = answer_to_move(client, op, to).await;
                if (answer.0.as_str(), answer.1.as_deref()) != NOT_IN_THE_TABLE {
                    left_by_nobody = false;
                    if from.is_final_outcome() {
                        wrong.push(format!("{writer}: {from} → {to}: {answer:?}"));
                    }
                }
            }
        }
        if left_by_nobody != from.is_final_outcome() {
            wrong.push(format!(
                "{from}: left by nobody in the database: {left_by_nobody}, a final outcome in core: {}",
                from.is_final_outcome()
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    fleet.stop().await;
}

/// A rejection as the store writes it, by hand: cancelled (no lease, as every move out
/// of `in_progress` leaves it), rejected, and who decided.
const REJECT_BY_HAND: &str =
    "UPDATE operations SET status = 'cancelled', approval_status = 'rejected',
    decided_by = 'ann', decided_at = now(), lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
    WHERE operation_id = $1";

/// Who asks to approve in the approval table.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Asker {
    /// A live approver of the tenant (the harness's `ann`).
    Approver,
    /// An operator granted the tenant: not an approver.
    Operator,
    /// A live approver who submitted the operation.
    Submitter,
}

#[tokio::test]
async fn approve_reject_and_dispute_answer_as_core_judges_and_leave_the_row_it_says() {
    let fleet = TestFleet::start().await;
    let mut sql = fleet.sql().await;
    let start = Utc::now() - Duration::hours(1);
    let mut people = People {
        start,
        standings: Vec::new(),
        keys: Vec::new(),
    };
    people.add(&mut sql, "olga", Kind::Demoted, 0).await;
    people.add(&mut sql, "sam", Kind::Live, 0).await;
    let ann_granted: DateTime<Utc> = sql
        .query_one(
            "SELECT granted_at FROM principal_tenants WHERE principal = 'ann' AND tenant_id = $1",
            &[&TENANT],
        )
        .await
        .unwrap()
        .get(0);
    people.standings.push(ApproverStanding {
        principal: "ann".to_owned(),
        role: Role::Approver,
        removed: false,
        tenant_granted_at: Some(ann_granted),
    });
    let mut wrong = Vec::new();

    // Approve: every (status, approval status, window, hash, earlier approval, asker).
    let statuses = [
        Status::NotStarted,
        Status::InProgress,
        Status::Succeeded,
        Status::Cancelled,
    ];
    let mut verdicts = std::collections::BTreeSet::new();
    for status in statuses {
        for approval in ApprovalStatus::ALL {
            for n in 0..8u32 {
                let bit = |b: u32| n & (1 << b) != 0;
                for asker in [Asker::Approver, Asker::Operator, Asker::Submitter] {
                    let name = match asker {
                        Asker::Approver => "ann",
                        Asker::Operator => "olga",
                        Asker::Submitter => "sam",
                    };
                    let state = RowState {
                        status,
                        approval,
                        approval_expired: bit(0),
                        ..RowState::ready()
                    };
                    let (op, stored) = operation_in(&fleet, &mut sql, state, "sam").await;
                    let (hash_matches, approved_before) = (!bit(1), bit(2));
                    if approved_before {
                        approval_row(&mut sql, &op, name, &stored, Utc::now(), None, false).await;
                    }
                    let hash = if hash_matches {
                        stored.as_str()
                    } else {
                        OTHER_HASH
                    };
                    let outcome = fleet
                        .store
                        .approve(at(&op), hash, &decider(name), None)
                        .await
                        .unwrap();
                    let asked = ApprovalAsked {
                        approval,
                        status,
                        expired: state.approval_expired,
                        hash_matches,
                        asker_approved_before: approved_before,
                    };
                    let verdict = judge_approval(asked);
                    verdicts.insert(format!("{verdict:?}"));
                    let (expected, row_after) = match verdict {
                        ApprovalVerdict::Count => {
                            // The database records it only from a live approver other
                            // than the submitter; then core's count decides.
                            let standing = people.standings.iter().find(|s| s.principal == name);
                            let recorded = standing
                                .is_some_and(|s| is_live_approver(s, Utc::now()))
                                && asker != Asker::Submitter;
                            let subject = QuorumSubject {
                                tenant_id: TENANT,
                                payload_hash: &stored,
                                submitted_by: Some("sam"),
                                approvals_required: 1,
                                signatures_required: 0,
                            };
                            let facts = [ApprovalFacts {
                                principal: name.to_owned(),
                                payload_hash: stored.clone(),
                                at: Utc::now(),
                                key_id: None,
                                voided: false,
                            }];
                            let count = live_quorum(&subject, &facts, &people.standings, &[]);
                            if !recorded {
                                (ApprovalOutcome::NotRecordedApprover, (status, approval))
                            } else if count.meets(&subject) {
                                (
                                    ApprovalOutcome::Approved,
                                    (status, ApprovalStatus::Approved),
                                )
                            } else {
                                let quorum = Quorum {
                                    received: count.counted,
                                    required: 1,
                                };
                                (ApprovalOutcome::Counted(quorum), (status, approval))
                            }
                        }
                        ApprovalVerdict::AlreadyCounted => {
                            (ApprovalOutcome::AlreadyCounted, (status, approval))
                        }
                        ApprovalVerdict::Expire => {
                            (ApprovalOutcome::Expired, (status, ApprovalStatus::Expired))
                        }
                        ApprovalVerdict::NotPending => (
                            ApprovalOutcome::NotPending {
                                approval_status: approval,
                                status,
                            },
                            (status, approval),
                        ),
                        ApprovalVerdict::HashMismatch => (
                            ApprovalOutcome::HashMismatch {
                                stored: stored.clone(),
                            },
                            (status, approval),
                        ),
                    };
                    let row = fleet.row(&op).await;
                    if outcome != expected || (row.status, row.approval_status) != row_after {
                        wrong.push(format!(
                            "approve by {asker:?}, {asked:?}: the store says {outcome:?} and leaves {}/{}, core {expected:?} and {row_after:?}",
                            row.status, row.approval_status
                        ));
                    }
                }
            }
        }
    }
    assert!(
        verdicts.len() == 5,
        "every approval verdict occurs: {verdicts:?}"
    );

    // Reject: every (status, approval status, escalation). The database's own answer to
    // a rejection written by hand as the API's role is asked too (rolled back): it allows
    // exactly the rejections core allows, so a role that skips the store can reject
    // neither a row in flight nor an escalated or final one.
    let mut api_sql = fleet.connect_as(DbRole::Api).await;
    for status in Status::ALL {
        for approval in ApprovalStatus::ALL {
            for escalated in [false, true] {
                let state = RowState {
                    status,
                    approval,
                    escalated,
                    ..RowState::ready()
                };
                let (op, _) = operation_in(&fleet, &mut sql, state, "billing-bot").await;
                let by_hand = {
                    let tx = api_sql.transaction().await.unwrap();
                    let answer = fleet_tests::answer_of(tx.execute(REJECT_BY_HAND, &[&op]).await);
                    tx.rollback().await.unwrap();
                    answer
                };
                let answered = fleet
                    .store
                    .reject(at(&op), &decider("ann"), "not this one")
                    .await
                    .map_err(|e| e.to_string());
                let asked = RejectAsked {
                    approval,
                    status,
                    escalated,
                };
                let (expected, row_after) = match judge_reject(asked) {
                    RejectVerdict::Reject => (RejectOutcome::Rejected, REJECTED),
                    RejectVerdict::AlreadyRejected => {
                        (RejectOutcome::AlreadyRejected, (status, approval))
                    }
                    RejectVerdict::Expired => (RejectOutcome::Expired, (status, approval)),
                    RejectVerdict::TooLate => {
                        (RejectOutcome::TooLate { status }, (status, approval))
                    }
                };
                // Allowed exactly where core rejects; refused as a check a client can act
                // on (23514), never by some other failure.
                let core_rejects = expected == RejectOutcome::Rejected;
                let db_answer = if core_rejects { "ok" } else { "23514" };
                if by_hand.0 != db_answer {
                    wrong.push(format!(
                        "reject, {asked:?}: core rejects: {core_rejects}, the database answers {by_hand:?} by hand"
                    ));
                }
                let row = fleet.row(&op).await;
                if answered != Ok(expected.clone())
                    || (row.status, row.approval_status) != row_after
                {
                    wrong.push(format!(
                        "reject, {asked:?}: the store says {answered:?} and leaves {}/{}, core {expected:?} and {row_after:?}",
                        row.status, row.approval_status
                    ));
                }
            }
        }
    }

    // Dispute: every status.
    for status in Status::ALL {
        let state = RowState {
            status,
            ..RowState::ready()
        };
        let (op, _) = operation_in(&fleet, &mut sql, state, "billing-bot").await;
        let outcome = fleet
            .store
            .dispute(at(&op), "the payee called", &decider("ann"))
            .await
            .unwrap();
        let (expected, after) = match judge_dispute(status) {
            DisputeVerdict::Dispute => (DecisionOutcome::Moved(Status::Disputed), Status::Disputed),
            DisputeVerdict::AlreadyDisputed => (DecisionOutcome::Already(status), status),
            DisputeVerdict::Refused => (DecisionOutcome::Refused { status }, status),
        };
        let row = fleet.row(&op).await;
        if outcome != expected || row.status != after {
            wrong.push(format!(
                "dispute of {status}: the store says {outcome:?} and leaves {}, core {expected:?} and {after}",
                row.status
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    fleet.stop().await;
}

/// The store's transition statement stamps `resolved_at` on a move exactly when core calls
/// its target final (`Status::is_final`, which the statement is given rather than keeping
/// a list of its own): every move of the state table, as the store makes it, from a row
/// set down unstamped. Moves the database refuses (out of a final outcome, a person's
/// decision of a worker's row) are left out; every status the table moves to is checked.
#[tokio::test]
async fn the_transition_stamps_the_resolved_time_exactly_on_core_s_final_statuses() {
    let fleet = TestFleet::start().await;
    let mut sql = fleet.sql().await;
    let mut checked = std::collections::BTreeSet::new();
    let mut targets = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for event in Event::ALL {
        for from in Status::ALL {
            let Ok(to) = transition(from, event) else {
                continue;
            };
            targets.insert(to.as_str());
            let state = RowState {
                status: from,
                escalated: event.is_operator_decision(),
                ..RowState::ready()
            };
            let (op, _) = operation_in(&fleet, &mut sql, state, "billing-bot").await;
            set_down(
                &mut sql,
                "UPDATE operations SET resolved_at = NULL WHERE operation_id = $1",
                &[&op],
            )
            .await;
            let fence = fleet.row(&op).await.fence;
            let object = format!("pay_{op}");
            let (actor, confirmation) = if event.is_operator_decision() {
                let c = Confirmation::Operator {
                    object_id: Some(object.clone()),
                    evidence: "the provider's dashboard".to_owned(),
                };
                ("operator:olga", c)
            } else {
                let c = Confirmation::Answer {
                    object_id: object.clone(),
                    fence,
                    provider_request_id: None,
                };
                ("execute", c)
            };
            let t = Transition {
                external_id: Some(object.as_str()),
                confirmation: (to == Status::Succeeded).then_some(confirmation),
                ..Transition::new(at(&op), from, fence, event, actor)
            };
            let Ok(TransitionOutcome::Moved { .. }) = fleet.store.transition(t, None).await else {
                continue;
            };
            let stamped = fleet.row(&op).await.resolved_at.is_some();
            checked.insert(to.as_str());
            if stamped != to.is_final() {
                wrong.push(format!(
                    "{from} → {to} by {event:?}: resolved_at stamped {stamped}, final in core {}",
                    to.is_final()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(checked, targets, "every status the state table moves to");
    fleet.stop().await;
}
