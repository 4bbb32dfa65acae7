//! The reconcile gauges, the approval inbox and the operator queue read what is waiting
//! now, not what once waited. Every operation passes through a pending approval and
//! through `in_progress`, and each time its row leaves one it leaves an entry behind in
//! that state's partial index until a vacuum, which the fleet never runs (and the server
//! may not). These reads go by index scans, which mark each such entry dead the first
//! time they meet it, so the next read skips it; and the operator queue finds what waits
//! by those indexes, not by walking the tenant's operations.

use fleet_tests::{pages_of, read_plan, seeded_with_triggers_off, TestFleet};

/// Operations that waited for approval, ran and succeeded: each row's earlier versions
/// left an entry in the index of pending approvals and in that of operations in progress.
const PASSED_THROUGH: i64 = 5_000;

/// The pages the count of pending approvals touches, as the server would plan it for any
/// session (bitmap scans allowed: they skip an entry already marked dead, but never mark
/// one).
async fn pending_approvals_pages(sql: &tokio_postgres::Client) -> i64 {
    let plan = read_plan(
        sql,
        true,
        &format!(
            "PREPARE approval_gauges(float8) AS {}",
            fleet_store::APPROVAL_GAUGES
        ),
        "EXECUTE approval_gauges(600)",
    )
    .await;
    pages_of(&plan)
}

/// The pages the two gauge statements touch, planned as [`pending_approvals_pages`] is.
async fn gauge_pages(sql: &tokio_postgres::Client) -> i64 {
    let fleet_gauges = read_plan(
        sql,
        true,
        &format!("PREPARE fleet_gauges AS {}", fleet_store::FLEET_GAUGES),
        "EXECUTE fleet_gauges",
    )
    .await;
    pages_of(&fleet_gauges) + pending_approvals_pages(sql).await
}

/// Seeds [`PASSED_THROUGH`] operations and moves each through a pending approval and
/// `in_progress` to `succeeded`, past the triggers.
async fn passed_through(sql: &tokio_postgres::Client) {
    let id = "'op_6' || lpad(i::text, 25, '0')";
    let seeded = seeded_with_triggers_off(
        sql,
        &format!(
            "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at)
             SELECT {id}, 'org_482', 'payment.create', 'payments',
                    jsonb_build_object('invoice_id', 'i' || i, 'beneficiary_id', 'vendor_77',
                                       'amount_minor', 1000 + i, 'currency', 'KZT'),
                    'sha256:' || repeat('0', 64), 'payments-v3', 'd', {id}, now() + interval '1 hour'
             FROM generate_series(1, $1::int8) i"
        ),
        &[&PASSED_THROUGH],
    )
    .await;
    assert_eq!(seeded, PASSED_THROUGH as u64);
    for step in [
        "UPDATE operations SET approval_status = 'approved', approved_hash = payload_hash,
                status = 'in_progress', lease_owner = 'execute-1', lease_expires_at = now() + interval '1 hour'",
        "UPDATE operations SET status = 'succeeded', lease_owner = NULL, lease_expires_at = NULL",
    ] {
        let moved = seeded_with_triggers_off(sql, step, &[]).await;
        assert_eq!(moved, PASSED_THROUGH as u64);
    }
}

#[tokio::test]
async fn after_one_count_the_gauges_skip_the_entries_of_operations_that_moved_on() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    passed_through(&sql).await;

    // The gauges as reconcile reads them, on every tick: nothing waits.
    let gauges = fleet.store.fleet_gauges().await.unwrap();
    assert_eq!((gauges.in_progress, gauges.ready), (0, 0));
    let approvals = fleet.store.approval_gauges(600.0).await.unwrap();
    assert_eq!(approvals.pending, 0);

    // The count marked what it met: a count now touches index pages only, not a heap page
    // per operation that once waited (about 5,000 rows' worth before that count).
    let pages = gauge_pages(&sql).await;
    assert!(
        pages < 100,
        "the gauges still read {pages} pages for {PASSED_THROUGH} operations that moved on"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn after_one_view_of_the_inbox_reads_of_pending_approvals_skip_the_operations_that_moved_on()
{
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    passed_through(&sql).await;

    // The inbox as a person opens it: nothing waits for them.
    let inbox = fleet
        .store
        .approval_inbox(&["org_482".to_owned()], 50)
        .await
        .unwrap();
    assert!(inbox.is_empty());

    // The view marked the entries it met in the index of pending approvals: counting
    // pending approvals now touches index pages only (about 250 heap pages' worth before).
    let pages = pending_approvals_pages(&sql).await;
    assert!(
        pages < 50,
        "pending approvals still read {pages} pages for {PASSED_THROUGH} operations that moved on"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn the_operator_queue_reads_what_waits_not_the_tenants_history() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    passed_through(&sql).await;
    // Of the tenant's 5,000 operations, two came back unknown and one was escalated.
    let op = |n: i64| format!("op_6{n:025}");
    let (a, b, c) = (op(7), op(8), op(9));
    let unknown = seeded_with_triggers_off(
        &sql,
        "UPDATE operations SET status = 'unknown', unknown_since = now() WHERE operation_id IN ($1, $2)",
        &[&a, &b],
    )
    .await;
    let escalated = seeded_with_triggers_off(
        &sql,
        "UPDATE operations SET escalated_at = now() WHERE operation_id = $1",
        &[&c],
    )
    .await;
    assert_eq!((unknown, escalated), (2, 1));

    let queue = fleet
        .store
        .operator_queue(&["org_482".to_owned()], 50)
        .await
        .unwrap();
    let mut waiting: Vec<&str> = queue.iter().map(|o| o.row.operation_id.as_str()).collect();
    waiting.sort();
    assert_eq!(waiting, [a.as_str(), b.as_str(), c.as_str()]);

    // Its plan as the store's read makes it (bitmap scans off): the pages of the three that
    // wait, not of the tenant's 5,000.
    let plan = read_plan(
        &sql,
        true,
        &format!(
            "SET enable_bitmapscan = off;
             PREPARE queue(text[], int8) AS SELECT o.operation_id FROM operations o {}",
            fleet_store::OPERATOR_QUEUE
        ),
        "EXECUTE queue(ARRAY['org_482'], 50)",
    )
    .await;
    let pages = pages_of(&plan);
    assert!(
        pages < 50,
        "the operator queue read {pages} pages for 3 operations waiting among 5,000"
    );
    fleet.stop().await;
}
