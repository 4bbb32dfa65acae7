//! The `possible_duplicate` risk cue through the real prepare against Postgres, RabbitMQ
//! and the simulator's directory: a second payment of the same invoice, or of the same
//! amount, to the same payee within 7 days of another payment that may still pay carries
//! the cue naming the first; a rejected one makes no duplicate; under a policy with a
//! `[risk]` table the cue alone asks one approver more; however many payments to the
//! payee came since, the earlier one is found.

use fleet_core::Status;
use fleet_tests::{at, eventually, hash_of, intent, with_amount, TestFleet};
use serde_json::{json, Value};

const TENANT: &str = "org_482";

/// The risk cues the operation's view carries.
async fn risk_of(fleet: &TestFleet, op: &str) -> Vec<Value> {
    fleet.view_in_db(op).await["risk"]
        .as_array()
        .expect("a payment's view carries its risk cues")
        .clone()
}

/// The seed payment (vendor_77) for `invoice`, of `amount_minor`.
fn payment(invoice: &str, amount_minor: i64) -> Value {
    let mut i = with_amount(intent(), json!(amount_minor));
    i["payload"]["invoice_id"] = json!(invoice);
    i
}

fn duplicate_of(op: &str, same: &str) -> Value {
    json!({"cue": "possible_duplicate", "operation_id": op, "same": same})
}

#[tokio::test]
async fn a_second_payment_of_the_same_invoice_or_amount_carries_possible_duplicate() {
    let fleet = TestFleet::with_prepare().await;
    let first = fleet.submitted(&payment("inv_9182", 1_250_000)).await;
    assert!(
        !risk_of(&fleet, &first)
            .await
            .iter()
            .any(|c| c["cue"] == "possible_duplicate"),
        "the first one repeats nothing"
    );

    // The same invoice again, while the first still waits for its approver.
    let second = fleet.submitted(&payment("inv_9182", 999_000)).await;
    let cues = risk_of(&fleet, &second).await;
    assert!(
        cues.contains(&duplicate_of(&first, "invoice_id")),
        "{cues:?}"
    );

    // Another invoice of the same amount.
    let third = fleet.submitted(&payment("inv_9300", 1_250_000)).await;
    let cues = risk_of(&fleet, &third).await;
    assert!(cues.contains(&duplicate_of(&first, "amount")), "{cues:?}");

    // Another invoice and amount: no duplicate.
    let other = fleet.submitted(&payment("inv_9400", 7_700)).await;
    assert!(
        !risk_of(&fleet, &other)
            .await
            .iter()
            .any(|c| c["cue"] == "possible_duplicate"),
        "nothing in common"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_rejected_payment_makes_no_duplicate() {
    let fleet = TestFleet::with_prepare().await;
    let first = fleet.submitted(&payment("inv_9182", 1_250_000)).await;
    fleet
        .store
        .reject(at(&first), &fleet_tests::decider("bob"), "wrong invoice")
        .await
        .unwrap();
    let again = fleet.submitted(&payment("inv_9182", 1_250_000)).await;
    assert!(
        !risk_of(&fleet, &again)
            .await
            .iter()
            .any(|c| c["cue"] == "possible_duplicate"),
        "a rejected payment paid nothing"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn under_a_policy_with_a_risk_table_a_possible_duplicate_alone_needs_one_approver_more() {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    // Paid once under payments-v3: the payee and its account are known from now on.
    let paid = payment("inv_9182", 1_250_000);
    let paid_op = fleet.submitted(&paid).await;
    fleet.approve(&paid_op, &hash_of(&paid)).await.unwrap();
    fleet.reaches(&paid_op, Status::Succeeded).await;

    fleet
        .assign_policy(Some(TENANT), "payment.create", "payments-v4")
        .await;
    let under_v4 = |invoice: &str, amount_minor: i64| {
        let mut i = payment(invoice, amount_minor);
        i["policy_version"] = json!("payments-v4");
        i
    };
    // Another invoice and amount to the same payee: no cue, one approver.
    let usual = fleet.submitted(&under_v4("inv_9500", 1_100_000)).await;
    let view = fleet.view_in_db(&usual).await;
    assert_eq!(
        (&view["risk"], &view["approvals_required"]),
        (&json!([]), &json!(1)),
        "{view}"
    );
    // The paid invoice again: the cue alone, and one approver more, one of them signed.
    let repeated = fleet.submitted(&under_v4("inv_9182", 1_000_000)).await;
    let view = fleet.view_in_db(&repeated).await;
    assert_eq!(
        view["risk"],
        json!([duplicate_of(&paid_op, "invoice_id")]),
        "{view}"
    );
    assert_eq!(view["approvals_required"], 2, "{view}");
    assert_eq!(fleet.row(&repeated).await.signatures_required, 1);
    fleet.stop().await;
}

/// How often the duplicate read's indexes were scanned (only that read uses them).
async fn duplicate_index_scans(fleet: &TestFleet) -> i64 {
    fleet
        .sql()
        .await
        .query_one(
            "SELECT sum(idx_scan)::int8 FROM pg_stat_user_indexes
             WHERE indexrelname IN ('operations_payments_by_invoice', 'operations_payments_by_amount')",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// Statistics taken while the tenant's payments were a few old ones to `vendor_77`, then
/// 30,000 recent payments to 500 payees of the tenant, unanalysed (autovacuum off): the
/// read still goes by its index, and finds the one recent payment of the same invoice.
#[tokio::test]
async fn the_duplicate_read_goes_by_its_index_even_with_stale_statistics() {
    let fleet = TestFleet::with_prepare().await;
    fleet
        .sql()
        .await
        .batch_execute(
            "ALTER TABLE operations SET (autovacuum_enabled = false);
             -- History seeded in bulk: triggers off (they refuse a row inserted settled).
             SET session_replication_role = replica;
             INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at,
                                     status, created_at)
             SELECT 'op_1' || lpad(i::text, 25, '0'), 'org_482', 'payment.create', 'payments',
                    jsonb_build_object('invoice_id', 'inv_old_' || i, 'beneficiary_id', 'vendor_77',
                                       'amount_minor', i, 'currency', 'KZT'),
                    'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_1' || lpad(i::text, 25, '0'),
                    now(), 'failed', now() - interval '60 days'
             FROM generate_series(1, 2000) i;
             ANALYZE operations;
             INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at,
                                     created_at)
             SELECT 'op_2' || lpad(i::text, 25, '0'), 'org_482', 'payment.create', 'payments',
                    jsonb_build_object('invoice_id', CASE WHEN i = 77 THEN 'inv_9182' ELSE 'inv_' || i END,
                                       'beneficiary_id', 'vendor_' || (i % 500), 'amount_minor', i,
                                       'currency', 'KZT'),
                    'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_2' || lpad(i::text, 25, '0'),
                    now() + interval '1 hour', now() - interval '1 day'
             FROM generate_series(1, 30000) i;
             SET session_replication_role = origin;",
        )
        .await
        .unwrap();
    let before = duplicate_index_scans(&fleet).await;
    let op = fleet.submitted(&payment("inv_9182", 1_250_000)).await;
    let seeded = format!("op_2{:0>25}", 77);
    let cues = risk_of(&fleet, &op).await;
    assert!(
        cues.contains(&duplicate_of(&seeded, "invoice_id")),
        "{cues:?}"
    );
    // Statistics reach the view once the prepare worker's backend reports them.
    eventually("the duplicate read to be counted on its index", || async {
        (duplicate_index_scans(&fleet).await > before).then_some(())
    })
    .await;
    fleet.stop().await;
}

/// The payee's 200 latest payments, all of the last day, share neither invoice nor amount
/// with the payment judged; behind them, two and three days ago, one of the same invoice
/// and one of the same amount. Each is still found: the read asks for the latest payment
/// of the same invoice, and of the same amount, not for the payee's latest payments.
#[tokio::test]
async fn a_duplicate_behind_200_later_payments_to_the_payee_is_still_found() {
    let fleet = TestFleet::with_prepare().await;
    fleet
        .sql()
        .await
        .batch_execute(
            "SET session_replication_role = replica;
             INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at,
                                     created_at)
             SELECT 'op_3' || lpad(i::text, 25, '0'), 'org_482', 'payment.create', 'payments',
                    jsonb_build_object('invoice_id', CASE i WHEN 1 THEN 'inv_9182' ELSE 'inv_x' || i END,
                                       'beneficiary_id', 'vendor_77',
                                       'amount_minor', CASE i WHEN 2 THEN 777000 ELSE i END,
                                       'currency', 'KZT'),
                    'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_3' || lpad(i::text, 25, '0'),
                    now() + interval '1 hour',
                    CASE i WHEN 1 THEN now() - interval '3 days' WHEN 2 THEN now() - interval '2 days'
                           ELSE now() - interval '1 day' + i * interval '1 second' END
             FROM generate_series(1, 202) i;
             SET session_replication_role = origin;",
        )
        .await
        .unwrap();
    let later: i64 = fleet
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM operations
             WHERE payload ->> 'beneficiary_id' = 'vendor_77'
               AND created_at > now() - interval '2 days' + interval '1 minute'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(later, 200, "the later payments to the payee");
    let seeded = |i: u32| format!("op_3{i:0>25}");

    let same_invoice = fleet.submitted(&payment("inv_9182", 1_250_000)).await;
    let cues = risk_of(&fleet, &same_invoice).await;
    assert!(
        cues.contains(&duplicate_of(&seeded(1), "invoice_id")),
        "{cues:?}"
    );

    let same_amount = fleet.submitted(&payment("inv_9999", 777_000)).await;
    let cues = risk_of(&fleet, &same_amount).await;
    assert!(
        cues.contains(&duplicate_of(&seeded(2), "amount")),
        "{cues:?}"
    );
    fleet.stop().await;
}

/// Seeds `count` payments to `vendor_77` made in the last day (numbered from `first`),
/// each of its own short invoice and its own amount, none of which the read below asks
/// for. Their insert triggers are off, as in the seeding above.
async fn seed_recent(sql: &tokio_postgres::Client, first: i64, count: i64) {
    let seeded = fleet_tests::seeded_with_triggers_off(
        sql,
            "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at,
                                     created_at)
             SELECT 'op_4' || lpad(i::text, 25, '0'), 'org_482', 'payment.create', 'payments',
                    jsonb_build_object('invoice_id', 'i' || i, 'beneficiary_id', 'vendor_77',
                                       'amount_minor', 1000000 + i, 'currency', 'KZT'),
                    'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_4' || lpad(i::text, 25, '0'),
                    now() + interval '1 hour', now() - interval '1 day' + i * interval '1 second'
             FROM generate_series($1::int8, $1::int8 + $2::int8 - 1) i",
            &[&first, &count],
    )
    .await;
    assert_eq!(seeded, count as u64);
}

/// Runs the statement `risk_read` prepares: a payment to `vendor_77` of an invoice and an
/// amount no other payment has.
const EXECUTE_RISK: &str =
    "EXECUTE risk('org_482', 'vendor_77', NULL, 'KZT', 'inv_none', 987654321,
     now() - interval '7 days', 'op_none', NULL)";

/// The pages a plan of the risk read touched, and the indexes by which it read `operations`.
fn pages_and_indexes(top: &serde_json::Value) -> (i64, Vec<String>) {
    let mut scans = Vec::new();
    fleet_tests::operations_scans(top, &mut scans);
    let indexes = scans.into_iter().filter_map(|(_, index)| index).collect();
    (fleet_tests::pages_of(top), indexes)
}

/// The pages intake's whole risk read (the aggregates and both duplicate probes) touches
/// for [`EXECUTE_RISK`], as the plan the server caches for it (`generic`, with the fleet's
/// session settings) or one planned for these values, and the indexes by which it reads
/// `operations`.
async fn risk_read(sql: &tokio_postgres::Client, generic: bool) -> (i64, Vec<String>) {
    let top = fleet_tests::read_plan(
        sql,
        generic,
        &format!(
            "PREPARE risk(text, text, text, text, text, int8, timestamptz, text, text) AS {}",
            *fleet_store::PAYMENT_RISK
        ),
        EXECUTE_RISK,
    )
    .await;
    pages_and_indexes(&top)
}

/// Each probe goes by its own index, never by the other's (both begin with the tenant and
/// the payee, and without statistics the planner once took the smaller for both, walking
/// every payment to the payee of the last seven days): the read touches about the same
/// pages after 10 recent payments to the payee as after 10,000, in the plan the server
/// caches and in one planned for the values.
#[tokio::test]
async fn the_risk_read_touches_the_same_pages_after_10_or_10_000_recent_payments_to_the_payee() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    seed_recent(&sql, 1, 10).await;
    let after_10 = [risk_read(&sql, false).await, risk_read(&sql, true).await];
    seed_recent(&sql, 11, 9_990).await;
    let after_10_000 = [risk_read(&sql, false).await, risk_read(&sql, true).await];
    for (plan, ((few, few_indexes), (many, many_indexes))) in ["custom", "generic"]
        .iter()
        .zip(after_10.iter().zip(&after_10_000))
    {
        for indexes in [few_indexes, many_indexes] {
            let probes: Vec<&str> = indexes
                .iter()
                .filter(|i| i.starts_with("operations_"))
                .map(String::as_str)
                .collect();
            assert_eq!(
                probes,
                [
                    "operations_payments_by_invoice",
                    "operations_payments_by_amount"
                ],
                "{plan}: each probe by its own index: {indexes:?}"
            );
        }
        // A level more in each probe's index at most, as the indexes grow.
        assert!(
            *many <= few + 4,
            "{plan}: {few} pages after 10 payments, {many} after 10,000"
        );
    }
    fleet.stop().await;
}

/// A connection keeps the plan it made for the read the first time it ran it, and the
/// fleet's connections plan generically, for their whole life. One that first ran it in a
/// new deployment's first seconds, with a hundred operations in the table, each changed
/// three times since its insert (approved, claimed, answered), took the tenant's index by
/// creation time for the probes (every index was still a page or two, and that one has the
/// fewest conditions to check): as the tenant's payments grew, each read walked all of the
/// last seven days. In a pipeline benchmark some runs' intake cost Postgres 1.5× the
/// others' for this alone. The plan made then must still read by the probes' own indexes,
/// and touch about the same pages, after 5,000 more recent payments of the tenant.
#[tokio::test]
async fn a_risk_read_planned_while_the_table_was_nearly_empty_reads_the_same_pages_once_it_is_not()
{
    let fleet = TestFleet::start().await;
    // The plan lives in this session; the seeding is done from another, since changing
    // `session_replication_role` (as seeding with triggers off does) drops cached plans.
    let (planner, seeder) = (fleet.sql().await, fleet.sql().await);
    seed_recent(&seeder, 1, 100).await;
    for _ in 0..3 {
        let changed = fleet_tests::seeded_with_triggers_off(
            &seeder,
            "UPDATE operations SET updated_at = now()",
            &[],
        )
        .await;
        assert_eq!(changed, 100);
    }
    let (few, _) = risk_read(&planner, true).await;
    seed_recent(&seeder, 101, 5_000).await;
    // Read with the plan the session keeps: no fresh PREPARE, as `risk_read` would make.
    let plan: serde_json::Value = planner
        .query_one(
            &format!("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {EXECUTE_RISK}"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let (many, indexes) = pages_and_indexes(&plan[0]["Plan"]);
    assert_eq!(
        indexes,
        [
            "operations_payments_by_invoice",
            "operations_payments_by_amount"
        ],
        "the plan made at 100 operations reads by each probe's own index ({many} pages)"
    );
    // Each probe's index a level deeper, and its backward step to the page before.
    assert!(
        many <= few + 8,
        "{few} pages when planned at 100 payments, {many} after 5,100"
    );
    fleet.stop().await;
}
