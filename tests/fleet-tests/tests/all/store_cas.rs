//! Compare-and-set statements under a lock wait, with two real Postgres sessions.
//!
//! Session A updates the operation in an open transaction without touching its status or
//! fence (as the sweeper's redrive mark or a lookup's bookkeeping do). Session B, the
//! store, runs a compare-and-set on the same row and blocks on A's row lock. Once B is
//! seen waiting, A commits; B must then succeed, since everything it compares is still
//! true. A statement that matched the row version its snapshot saw, instead of
//! re-checking the newest one, would report a stale row here and, for a lease renewal,
//! make the execute worker abandon a live call.

use fleet_tests::at;
use std::future::Future;

use chrono::Utc;
use fleet_core::{ApprovalStatus, Event, Status};
use fleet_store::{
    ApprovalOutcome, Claim, RejectOutcome, ReportedObject, Transition, TransitionOutcome,
    WebhookEvent, WebhookOutcome,
};
use fleet_tests::{eventually, hash_of, intent, op_of, TestFleet};

const OWNER: &str = "execute-test";
const LEASE_TTL_MS: i64 = 30_000;

/// A fleet (no workers) holding one prepared operation: (fleet, operation id, hash).
async fn prepared() -> (TestFleet, String, String) {
    let fleet = TestFleet::start().await;
    let (op, hash) = prepare_one(&fleet).await;
    (fleet, op, hash)
}

/// Stores one intent as prepare does: (operation id, hash).
async fn prepare_one(fleet: &TestFleet) -> (String, String) {
    let i = intent();
    let valid = fleet_core::parse_intent(&serde_json::to_vec(&i).unwrap()).unwrap();
    fleet.store.insert_prepared(&valid, 1, None).await.unwrap();
    (op_of(&i), hash_of(&i))
}

async fn approved() -> (TestFleet, String) {
    let (fleet, op, hash) = prepared().await;
    assert_eq!(
        fleet
            .store
            .approve(at(&op), &hash, &fleet_tests::decider("ann"), None)
            .await
            .unwrap(),
        ApprovalOutcome::Approved
    );
    (fleet, op)
}

/// An approved operation claimed by `OWNER`: (fleet, operation id, fence held).
async fn claimed() -> (TestFleet, String, i64) {
    let (fleet, op) = approved().await;
    let Claim::Claimed(c) = fleet
        .store
        .claim_ready(at(&op), &[], OWNER, LEASE_TTL_MS)
        .await
        .unwrap()
    else {
        panic!("a fresh approved operation is claimable");
    };
    (fleet, op, c.fence)
}

/// Runs `cas` while another transaction holds a committed-later update of the row: the
/// update is made, `cas` is started and seen waiting for the row lock, then the other
/// transaction commits and `cas`'s result is returned.
async fn after_a_concurrent_update<T, F>(fleet: &TestFleet, op: &str, cas: F) -> T
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    after_a_concurrent(
        fleet,
        op,
        "UPDATE operations SET updated_at = now() WHERE operation_id = $1",
        cas,
    )
    .await
}

/// [`after_a_concurrent_update`] with session A's own `update` of operation `$1`.
async fn after_a_concurrent<T, F>(fleet: &TestFleet, op: &str, update: &str, cas: F) -> T
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let a = fleet.sql().await;
    a.batch_execute("BEGIN").await.unwrap();
    let touched = a.execute(update, &[&op]).await.unwrap();
    assert_eq!(touched, 1, "session A updates the row");
    let before = fleet.row(op).await;

    let b = tokio::spawn(cas);
    let observer = fleet.sql().await;
    eventually("the compare-and-set to wait for session A's row lock", || {
        let observer = &observer;
        async move {
            let r = observer
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE datname = current_database() AND application_name = 'fleet' AND wait_event_type = 'Lock'",
                    &[],
                )
                .await
                .unwrap();
            (r.get::<_, i64>(0) == 1).then_some(())
        }
    })
    .await;
    assert!(!b.is_finished(), "the compare-and-set is still blocked");
    a.batch_execute("COMMIT").await.unwrap();

    let out = b.await.expect("the compare-and-set task");
    let after = fleet.row(op).await;
    assert!(after.updated_at >= before.updated_at);
    out
}

#[tokio::test]
async fn renew_lease_succeeds_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op, fence) = claimed().await;
    let before = fleet.row(&op).await.lease_expires_at.unwrap();
    let (store, id) = (fleet.store.clone(), op.clone());
    let renewed = after_a_concurrent_update(&fleet, &op, async move {
        store
            .renew_lease(at(&id), fence, LEASE_TTL_MS)
            .await
            .unwrap()
    })
    .await;
    assert!(
        renewed,
        "a live lease renewal that waited for the row lock must still succeed"
    );
    let row = fleet.row(&op).await;
    assert!(
        row.lease_expires_at.unwrap() > before,
        "the lease was extended"
    );
    assert_eq!((row.status, row.fence), (Status::InProgress, fence));
    fleet.stop().await;
}

#[tokio::test]
async fn transition_moves_the_row_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op, fence) = claimed().await;
    let (store, id) = (fleet.store.clone(), op.clone());
    let outcome = after_a_concurrent_update(&fleet, &op, async move {
        let t = provider_succeeded(&id, fence, "pay_under_lock_wait");
        store
            .transition(t, Some(&succeeded_attempt("pay_under_lock_wait")))
            .await
            .unwrap()
    })
    .await;
    assert!(
        matches!(
            outcome,
            TransitionOutcome::Moved {
                to: Status::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.status, row.external_id.as_deref()),
        (Status::Succeeded, Some("pay_under_lock_wait"))
    );
    fleet.stop().await;
}

#[tokio::test]
async fn transition_many_moves_the_row_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op, fence) = claimed().await;
    let (store, id) = (fleet.store.clone(), op.clone());
    let outcomes = after_a_concurrent_update(&fleet, &op, async move {
        let t = provider_succeeded(&id, fence, "pay_batch_under_lock_wait");
        let attempt = succeeded_attempt("pay_batch_under_lock_wait");
        store.transition_many(&[(t, &attempt)]).await.unwrap()
    })
    .await;
    assert!(
        matches!(
            outcomes.as_slice(),
            [TransitionOutcome::Moved {
                to: Status::Succeeded,
                ..
            }]
        ),
        "{outcomes:?}"
    );
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.status, row.external_id.as_deref()),
        (Status::Succeeded, Some("pay_batch_under_lock_wait"))
    );
    fleet.stop().await;
}

#[tokio::test]
async fn claim_ready_claims_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op) = approved().await;
    let (store, id) = (fleet.store.clone(), op.clone());
    let claim = after_a_concurrent_update(&fleet, &op, async move {
        store
            .claim_ready(at(&id), &[], OWNER, LEASE_TTL_MS)
            .await
            .unwrap()
    })
    .await;
    let Claim::Claimed(c) = claim else {
        panic!("an approved row touched by another transaction is still claimable")
    };
    assert_eq!(c.fence, 1);
    assert_eq!(fleet.row(&op).await.status, Status::InProgress);
    fleet.stop().await;
}

#[tokio::test]
async fn claim_with_the_read_fence_claims_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op) = approved().await;
    let (store, id) = (fleet.store.clone(), op.clone());
    let claim = after_a_concurrent_update(&fleet, &op, async move {
        store.claim(at(&id), 0, OWNER, LEASE_TTL_MS).await.unwrap()
    })
    .await;
    assert!(
        matches!(claim, Claim::Claimed(ref c) if c.fence == 1),
        "{claim:?}"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn approve_succeeds_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op, hash) = prepared().await;
    let (store, id) = (fleet.store.clone(), op.clone());
    let outcome = after_a_concurrent_update(&fleet, &op, async move {
        store
            .approve(at(&id), &hash, &fleet_tests::decider("ann"), None)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(outcome, ApprovalOutcome::Approved);
    assert_eq!(
        fleet.row(&op).await.approval_status,
        ApprovalStatus::Approved
    );
    fleet.stop().await;
}

#[tokio::test]
async fn reject_cancels_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op, _) = prepared().await;
    let (store, id) = (fleet.store.clone(), op.clone());
    let outcome = after_a_concurrent_update(&fleet, &op, async move {
        store
            .reject(at(&id), &fleet_tests::decider("ann"), "wrong beneficiary")
            .await
            .unwrap()
    })
    .await;
    assert_eq!(outcome, RejectOutcome::Rejected);
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.status, row.approval_status),
        (Status::Cancelled, ApprovalStatus::Rejected)
    );
    fleet.stop().await;
}

/// A rejection that read the row before another session escalated it (or refused a late
/// approval, expiring it) and moves it after: the answer is the one a rejection of the
/// row as it is now gets, not an error of the database, and nothing is rejected.
async fn reject_after_a_concurrent(update: &str) -> (RejectOutcome, RejectOutcome) {
    let (fleet, op, _) = prepared().await;
    let (store, id) = (fleet.store.clone(), op.clone());
    let raced = after_a_concurrent(&fleet, &op, update, async move {
        store
            .reject(at(&id), &fleet_tests::decider("ann"), "wrong beneficiary")
            .await
    })
    .await
    .unwrap_or_else(|e| panic!("the rejection that met a moved row: {e:?}"));
    let row = fleet.row(&op).await;
    assert_eq!(row.status, Status::NotStarted, "nothing was cancelled");
    assert_ne!(row.approval_status, ApprovalStatus::Rejected);
    let seen_first = fleet
        .store
        .reject(at(&op), &fleet_tests::decider("ann"), "wrong beneficiary")
        .await
        .unwrap();
    fleet.stop().await;
    (raced, seen_first)
}

#[tokio::test]
async fn reject_of_a_row_escalated_while_it_waited_is_too_late() {
    let (raced, seen_first) = reject_after_a_concurrent(
        "UPDATE operations SET escalated_at = now(), updated_at = now() WHERE operation_id = $1",
    )
    .await;
    assert_eq!(
        raced,
        RejectOutcome::TooLate {
            status: Status::NotStarted
        }
    );
    assert_eq!(raced, seen_first);
}

#[tokio::test]
async fn reject_of_a_row_expired_while_it_waited_is_answered_expired() {
    let (raced, seen_first) = reject_after_a_concurrent(
        "UPDATE operations SET approval_status = 'expired',
             approval_expires_at = now() - interval '1 second', updated_at = now()
         WHERE operation_id = $1",
    )
    .await;
    assert_eq!(raced, RejectOutcome::Expired);
    assert_eq!(raced, seen_first);
}

#[tokio::test]
async fn a_webhook_is_applied_after_waiting_for_a_concurrent_update_of_the_row() {
    let (fleet, op, _) = claimed().await;
    let ev = WebhookEvent {
        provider: fleet_core::catalogue::provider_spec::PAYMENTS.name,
        event_id: format!("evt_{}", ulid::Ulid::new()),
        event_type: "payment.succeeded".into(),
        received_at: Utc::now(),
        payload_hash: fleet_core::PayloadHash::parse(&format!("sha256:{}", "ab".repeat(32)))
            .unwrap(),
        object: ReportedObject {
            id: Some("pay_from_webhook".into()),
            reference: Some(fleet_tests::reference(&op)),
            status: Some("succeeded".into()),
            amount_minor: Some(1_250_000),
            currency: Some("KZT".into()),
            failure_code: None,
        },
    };
    let store = fleet.store.clone();
    let outcome = after_a_concurrent_update(&fleet, &op, async move {
        store.ingest_webhook(&ev).await.unwrap()
    })
    .await;
    assert!(
        matches!(
            outcome,
            WebhookOutcome::Applied {
                to: Status::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(fleet.row(&op).await.status, Status::Succeeded);
    fleet.stop().await;
}

/// Gives `operations` the statistics of a table that grew fast since its last ANALYZE: the
/// rows analyzed were all final, then many `not_started` rows arrived, so the statistics
/// say the partial index on `not_started` rows is empty while it holds them all.
async fn stale_statistics(fleet: &TestFleet) {
    let sql = fleet.sql().await;
    sql.batch_execute(
        "ALTER TABLE operations SET (autovacuum_enabled = false);
         -- History seeded in bulk, as it would be after years of use: triggers off (they
         -- refuse an operation inserted already settled).
         SET session_replication_role = replica;
         INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash, policy_version,
                                 data_version, idempotency_key, approval_expires_at, status, approval_status, approved_hash,
                                 fence, resolved_at)
         SELECT 'op_1' || lpad(i::text, 25, '0'), 'org_history', 'payment.create', 'payments', '{}',
                'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_1' || lpad(i::text, 25, '0'), now(), 'succeeded',
                'approved', 'sha256:' || repeat('0', 64), 1, now()
         FROM generate_series(1, 2000) i;
         SET session_replication_role = origin;
         ANALYZE operations;
         INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash, policy_version,
                                 data_version, idempotency_key, approval_expires_at)
         SELECT 'op_2' || lpad(i::text, 25, '0'), 'org_backlog', 'payment.create', 'payments', '{}',
                'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_2' || lpad(i::text, 25, '0'), now() + interval '1 hour'
         FROM generate_series(1, 30000) i;",
    )
    .await
    .unwrap();
    let tuples: f32 = sql
        .query_one(
            "SELECT reltuples FROM pg_class WHERE relname = 'operations_unstarted_expiry'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        tuples, 0.0,
        "the statistics say the partial index on not_started rows is empty"
    );
}

/// Whether a plan reads `operations` through its primary key alone: an index scan, or a
/// bitmap scan whose only index is the primary key (a key list), never a sequential scan
/// or another index.
/// (The claim also counts each row's approvals again, by the approvals' own primary key,
/// whose first column is the operation.)
fn by_primary_key_only(scans: &[(String, Option<String>)]) -> bool {
    scans.iter().all(|(node, index)| match node.as_str() {
        "Index Scan" | "Bitmap Index Scan" => {
            matches!(index.as_deref(), Some("operations_pkey" | "approvals_pkey"))
        }
        "Bitmap Heap Scan" => true,
        _ => false,
    }) && scans
        .iter()
        .any(|(_, index)| index.as_deref() == Some("operations_pkey"))
}

/// The plan Postgres uses for the prepared statement `name` on this connection.
async fn plan_of(
    client: &tokio_postgres::Client,
    name: &str,
    params: i32,
) -> Vec<(String, Option<String>)> {
    let args = match params {
        0 => String::new(),
        n => format!("({})", vec!["NULL"; n as usize].join(", ")),
    };
    let explain = format!("EXPLAIN (FORMAT JSON) EXECUTE {name}{args}");
    let rows = client.query(explain.as_str(), &[]).await.unwrap();
    let plan: serde_json::Value = rows[0].get(0);
    let mut scans = Vec::new();
    fleet_tests::operations_scans(&plan[0]["Plan"], &mut scans);
    scans
}

#[tokio::test]
async fn every_compare_and_set_is_planned_by_primary_key_even_when_statistics_say_a_status_index_is_empty(
) {
    let fleet = TestFleet::start().await;
    stale_statistics(&fleet).await;
    let (op, hash) = prepare_one(&fleet).await;
    let (other, other_hash) = prepare_one(&fleet).await;

    // One connection, so every statement the store prepares lands on it.
    let store = fleet_store::Store::connect(&fleet.database_url, 1).unwrap();
    assert_eq!(
        store
            .approve(at(&op), &hash, &fleet_tests::decider("ann"), None)
            .await
            .unwrap(),
        ApprovalOutcome::Approved
    );
    assert_eq!(
        store
            .reject(at(&other), &fleet_tests::decider("ann"), "duplicate")
            .await
            .unwrap(),
        RejectOutcome::Rejected
    );
    assert_eq!(
        store
            .approve(at(&other), &other_hash, &fleet_tests::decider("ann"), None)
            .await
            .unwrap(),
        ApprovalOutcome::NotPending {
            approval_status: ApprovalStatus::Rejected,
            status: Status::Cancelled
        }
    );
    assert!(matches!(
        store.claim(at(&op), 5, OWNER, LEASE_TTL_MS).await.unwrap(),
        Claim::NotClaimable
    ));
    let Claim::Claimed(c) = store
        .claim_ready(at(&op), &[], OWNER, LEASE_TTL_MS)
        .await
        .unwrap()
    else {
        panic!("claimable")
    };
    assert!(store
        .renew_lease(at(&op), c.fence, LEASE_TTL_MS)
        .await
        .unwrap());
    let t = provider_succeeded(&op, c.fence, "pay_renewed");
    assert!(matches!(
        store
            .transition(t, Some(&succeeded_attempt("pay_renewed")))
            .await
            .unwrap(),
        TransitionOutcome::Moved { .. }
    ));
    // The many-row form: the same answer again finds the row moved on.
    let again = provider_succeeded(&op, c.fence, "pay_renewed");
    let attempt = succeeded_attempt("pay_renewed");
    assert_eq!(
        store.transition_many(&[(again, &attempt)]).await.unwrap(),
        vec![TransitionOutcome::Stale]
    );

    // The store's own session: its settings and prepared statements are visible there only.
    let client = store.pooled_session().await.unwrap();
    let mode: String = client
        .query_one("SHOW plan_cache_mode", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        mode, "force_generic_plan",
        "the pool's connections plan generically"
    );
    let prepared = client
        .query(
            "SELECT name, statement, cardinality(parameter_types) FROM pg_prepared_statements
             WHERE statement LIKE '%UPDATE operations SET%' AND statement NOT LIKE '%pg_prepared_statements%'
             ORDER BY name",
            &[],
        )
        .await
        .unwrap();
    let mut checked = Vec::new();
    for row in &prepared {
        let (name, statement, params): (String, String, i32) = (row.get(0), row.get(1), row.get(2));
        let scans = plan_of(&client, &name, params).await;
        assert!(
            !scans.is_empty(),
            "{statement}: no scan of operations in its plan"
        );
        assert!(by_primary_key_only(&scans), "{statement}: {scans:?}");
        checked.push(statement);
    }
    for (what, marker) in [
        ("claim", "fence = fence + 1"),
        ("renew_lease", "lease_expires_at = now() + make_interval"),
        ("approve", "approved_hash = $2"),
        ("transition", "status_reason = $6"),
        ("transition_many", "FOR NO KEY UPDATE OF operations"),
    ] {
        assert!(
            checked.iter().any(|s| s.contains(marker)),
            "the {what} statement was checked"
        );
    }

    // The premise holds: the same kind of statement with a literal status is planned on
    // the partial index the statistics call empty.
    client
        .batch_execute(
            "PREPARE literal_status(text) AS UPDATE operations SET updated_at = now()
             WHERE operation_id = $1 AND status = 'not_started' AND approval_expires_at > now()",
        )
        .await
        .unwrap();
    let scans = plan_of(&client, "literal_status", 1).await;
    assert_eq!(
        scans,
        vec![(
            "Index Scan".to_owned(),
            Some("operations_unstarted_expiry".to_owned())
        )]
    );
    drop(client);
    store.close();
    fleet.stop().await;
}

#[tokio::test]
async fn the_claim_stays_planned_by_primary_key_when_planned_on_a_near_empty_table_never_analysed()
{
    // A fresh deployment: the execute worker's connection plans its claim while the table
    // is nearly empty and has no statistics, and keeps that generic plan while thousands
    // of approved rows arrive (nothing analyses the table in between, so nothing makes it
    // plan again). A sequential scan (or a status index the planner guessed selective)
    // would then read the whole backlog for every batch.
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    sql.batch_execute("ALTER TABLE operations SET (autovacuum_enabled = false)")
        .await
        .unwrap();
    let (op, hash) = prepare_one(&fleet).await;
    let (second, second_hash) = prepare_one(&fleet).await;

    // One connection, so the claim's prepared statement lands on it.
    let store = fleet_store::Store::connect(&fleet.database_url, 1).unwrap();
    for (op, hash) in [(&op, &hash), (&second, &second_hash)] {
        assert_eq!(
            store
                .approve(at(op), hash, &fleet_tests::decider("ann"), None)
                .await
                .unwrap(),
            ApprovalOutcome::Approved
        );
    }
    let claimed = store
        .claim_ready_many(&[at(op.as_str())], &[], OWNER, LEASE_TTL_MS)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "planned and run on a near-empty table");

    // A backlog of approved rows, seeded in bulk with their approvals (triggers off: the
    // database refuses an operation inserted already approved).
    sql.batch_execute(
        "SET session_replication_role = replica;
         INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash, policy_version,
                                 data_version, idempotency_key, approval_expires_at, approval_status, approved_hash)
         SELECT 'op_2' || lpad(i::text, 25, '0'), 'org_backlog', 'payment.create', 'payments', '{}',
                'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_2' || lpad(i::text, 25, '0'),
                now() + interval '1 hour', 'approved', 'sha256:' || repeat('0', 64)
         FROM generate_series(1, 5000) i;
         INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, at)
         SELECT 'op_2' || lpad(i::text, 25, '0'), 'org_backlog', 'ann', 'token', 'sha256:' || repeat('0', 64),
                now() + interval '1 second'
         FROM generate_series(1, 5000) i;
         SET session_replication_role = origin;
         -- ann approves for that tenant too (the claim counts live approvers of the tenant).
         INSERT INTO principal_tenants (principal, tenant_id) VALUES ('ann', 'org_backlog');",
    )
    .await
    .unwrap();
    let analysed: bool = sql
        .query_one(
            "SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL
             FROM pg_stat_user_tables WHERE relname = 'operations'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!analysed, "the premise: operations was never analysed");
    let claimed = store
        .claim_ready_many(
            &[
                at(second.as_str()),
                fleet_core::OpRef::new("org_backlog", "op_20000000000000000000000001"),
            ],
            &[],
            OWNER,
            LEASE_TTL_MS,
        )
        .await
        .unwrap();
    assert_eq!(
        claimed.len(),
        2,
        "the same statement claims from the backlog"
    );

    let client = store.pooled_session().await.unwrap();
    let prepared = client
        .query(
            "SELECT name, cardinality(parameter_types) FROM pg_prepared_statements
             WHERE statement LIKE '%fence = fence + 1%' AND statement NOT LIKE '%pg_prepared_statements%'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(prepared.len(), 1, "one claim statement, planned once");
    let (name, params): (String, i32) = (prepared[0].get(0), prepared[0].get(1));
    let scans = plan_of(&client, &name, params).await;
    assert!(
        by_primary_key_only(&scans),
        "the claim reads the keys it was given through the primary key: {scans:?}"
    );
    drop(client);
    store.close();
    fleet.stop().await;
}

/// Execute's answer that the provider made `object_id` for the attempt of `fence`.
fn provider_succeeded<'a>(op: &'a str, fence: i64, object_id: &'a str) -> Transition<'a> {
    Transition {
        external_id: Some(object_id),
        confirmation: Some(answered(object_id, fence)),
        ..Transition::new(
            at(op),
            Status::InProgress,
            fence,
            Event::ProviderSucceeded,
            "execute",
        )
    }
}

/// The receipt of a success by the provider's answer to the attempt of `fence`.
fn answered(object_id: &str, fence: i64) -> fleet_core::confirmation::Confirmation {
    fleet_core::confirmation::Confirmation::Answer {
        object_id: object_id.to_owned(),
        fence,
        provider_request_id: None,
    }
}

/// The attempt's answer a success stands on (the database checks it is there).
fn succeeded_attempt(object_id: &str) -> fleet_core::AttemptRecord {
    fleet_core::AttemptRecord {
        external_id: Some(object_id.to_owned()),
        ..fleet_core::AttemptRecord::new(fleet_core::AttemptOutcome::Succeeded)
    }
}

/// An answer's attempt with `detail`, to tell the answers apart in the attempt rows.
fn attempt(outcome: fleet_core::AttemptOutcome, detail: &str) -> fleet_core::AttemptRecord {
    fleet_core::AttemptRecord {
        detail: Some(detail.to_owned()),
        ..fleet_core::AttemptRecord::new(outcome)
    }
}

#[tokio::test]
async fn a_batch_of_answers_gives_each_its_own_outcome_and_completes_every_attempt() {
    let fleet = TestFleet::start().await;
    let mut claimed = Vec::new();
    for _ in 0..4 {
        let (op, hash) = prepare_one(&fleet).await;
        assert_eq!(
            fleet
                .store
                .approve(at(&op), &hash, &fleet_tests::decider("ann"), None)
                .await
                .unwrap(),
            ApprovalOutcome::Approved
        );
        let Claim::Claimed(c) = fleet
            .store
            .claim_ready(at(&op), &[], OWNER, LEASE_TTL_MS)
            .await
            .unwrap()
        else {
            panic!("a fresh approved operation is claimable");
        };
        claimed.push((op, c.fence));
    }
    let [(succeeds, fs), (stale, fst), (refused, fr), (unknown, fu)] =
        <[(String, i64); 4]>::try_from(claimed).unwrap();
    // The stale answer's claim was taken over: the row's fence moved on.
    let sql = fleet.sql().await;
    let bumped = sql
        .execute(
            "UPDATE operations SET fence = fence + 1 WHERE operation_id = $1",
            &[&stale],
        )
        .await
        .unwrap();
    assert_eq!(bumped, 1);
    assert!(
        fleet_core::transition(Status::InProgress, Event::LookupSucceeded).is_err(),
        "the premise: the state machine refuses this event from in_progress"
    );

    use fleet_core::AttemptOutcome as A;
    let succeeded = fleet_core::AttemptRecord {
        detail: Some("first".to_owned()),
        ..succeeded_attempt("pay_batched")
    };
    let again = fleet_core::AttemptRecord {
        detail: Some("again".to_owned()),
        ..succeeded_attempt("pay_batched")
    };
    let (stale_attempt, refused_attempt, unknown_attempt) = (
        attempt(A::Failed, "stale"),
        attempt(A::Succeeded, "refused"),
        attempt(A::Unknown, "unknown"),
    );
    let success = |detail| Transition {
        external_id: Some("pay_batched"),
        confirmation: Some(answered("pay_batched", fs)),
        evidence: Some(serde_json::json!({ "answer": detail })),
        ..Transition::new(
            at(&succeeds),
            Status::InProgress,
            fs,
            Event::ProviderSucceeded,
            "execute",
        )
    };
    // Given out of (tenant, operation id) order, and one operation answered twice.
    let items = vec![
        (
            Transition::new(
                at(&unknown),
                Status::InProgress,
                fu,
                Event::ProviderAmbiguous,
                "execute",
            ),
            &unknown_attempt,
        ),
        (success("first"), &succeeded),
        (
            Transition::new(
                at(&refused),
                Status::InProgress,
                fr,
                Event::LookupSucceeded,
                "execute",
            ),
            &refused_attempt,
        ),
        (
            Transition::new(
                at(&stale),
                Status::InProgress,
                fst,
                Event::ProviderFailed,
                "execute",
            ),
            &stale_attempt,
        ),
        (success("again"), &again),
    ];
    let outcomes = fleet.store.transition_many(&items).await.unwrap();
    assert!(
        matches!(
            outcomes[0],
            TransitionOutcome::Moved {
                to: Status::Unknown,
                ..
            }
        ),
        "{outcomes:?}"
    );
    assert!(
        matches!(
            outcomes[1],
            TransitionOutcome::Moved {
                to: Status::Succeeded,
                ..
            }
        ),
        "{outcomes:?}"
    );
    assert!(
        matches!(outcomes[2], TransitionOutcome::Refused(_)),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[3], TransitionOutcome::Stale, "{outcomes:?}");
    assert_eq!(
        outcomes[4],
        TransitionOutcome::Stale,
        "the second answer sees the first's move: {outcomes:?}"
    );

    for (op, status) in [
        (&unknown, Status::Unknown),
        (&succeeds, Status::Succeeded),
        (&refused, Status::InProgress),
        (&stale, Status::InProgress),
    ] {
        assert_eq!(fleet.row(op).await.status, status, "{op}");
    }
    // Every attempt is completed, with its own answer; the operation answered twice holds
    // the later answer, as two transitions one after the other leave it.
    for (op, fence, outcome, detail) in [
        (&unknown, fu, "unknown", "unknown"),
        (&succeeds, fs, "succeeded", "again"),
        (&refused, fr, "succeeded", "refused"),
        (&stale, fst, "failed", "stale"),
    ] {
        let row = sql
            .query_one(
                "SELECT finished_at IS NOT NULL, outcome, detail FROM attempts
                 WHERE operation_id = $1 AND fence = $2",
                &[op, &fence],
            )
            .await
            .unwrap();
        assert_eq!(
            (
                row.get::<_, bool>(0),
                row.get::<_, String>(1),
                row.get::<_, String>(2)
            ),
            (true, outcome.to_owned(), detail.to_owned()),
            "{op}"
        );
    }
    // One history row for each move, in (tenant, operation id) order, with its answer's
    // content; none for the refused and the stale answers.
    let moves = sql
        .query(
            "SELECT operation_id, from_status, to_status, fence, actor, evidence->>'answer'
             FROM operation_events
             WHERE kind = 'transition' AND from_status = 'in_progress' ORDER BY id",
            &[],
        )
        .await
        .unwrap();
    let moves: Vec<(String, String, String, i64, String, Option<String>)> = moves
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
        .collect();
    let mut expected = vec![
        (
            succeeds.clone(),
            "in_progress".to_owned(),
            "succeeded".to_owned(),
            fs,
            "execute".to_owned(),
            Some("first".to_owned()),
        ),
        (
            unknown.clone(),
            "in_progress".to_owned(),
            "unknown".to_owned(),
            fu,
            "execute".to_owned(),
            None,
        ),
    ];
    expected.sort();
    assert_eq!(moves, expected);
    fleet.stop().await;
}
