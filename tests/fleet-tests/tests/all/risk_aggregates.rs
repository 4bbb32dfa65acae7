//! Risk cues judged over the aggregates the database keeps per payee and per account
//! (`migrations/0059_payee_aggregates.sql`), through the store against real Postgres.
//!
//! History is seeded in bulk the way a success is recorded: rows are inserted as payments
//! in progress (their insert triggers off: they refuse a row inserted already approved),
//! then moved to `succeeded` by an UPDATE with every trigger on, so the aggregates are the
//! real trigger's, as the execute worker, reconcile or an operator would have made them.

use fleet_core::risk::{cues, PayeeNow, PaymentAsked, RiskCue};
use fleet_tests::{eventually, TestFleet};
use serde_json::Value;

const TENANT: &str = "org_risk";

/// Settles `count` payments to `payee` on `account` (`None`: no directory named one) of
/// `amount_minor` KZT, numbered from `first`: made at the 90-days-ago mark plus their
/// number (modulo a million) in seconds, so a higher number is a later payment and
/// 1,000,000 is made before every other.
async fn settle(
    sql: &tokio_postgres::Client,
    first: i64,
    count: i64,
    payee: &str,
    account: Option<&str>,
    amount_minor: i64,
) {
    let seeded = fleet_tests::seeded_with_triggers_off(
        sql,
            "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at,
                                     status, approval_status, approved_hash, payee, created_at)
             SELECT 'op_' || lpad(i::text, 24, '0'), $1, 'payment.create', 'payments',
                    jsonb_build_object('invoice_id', 'inv_' || i, 'beneficiary_id',
                                       CASE WHEN $4 = '*' THEN 'vendor_other_' || i ELSE $4 END,
                                       'amount_minor', $6::bigint, 'currency', 'KZT'),
                    'sha256:' || repeat('0', 64), 'payments-v3', 'd', $1 || '.op_' || i,
                    now() + interval '1 hour', 'in_progress', 'approved', 'sha256:' || repeat('0', 64),
                    CASE WHEN $5::text IS NULL THEN NULL
                         ELSE jsonb_build_object('account', jsonb_build_object('fingerprint', $5::text)) END,
                    now() - interval '90 days' + (i % 1000000) * interval '1 second'
             FROM generate_series($2::int8, $2::int8 + $3::int8 - 1) i",
            &[&TENANT, &first, &count, &payee, &account, &amount_minor],
    )
    .await;
    assert_eq!(seeded, count as u64);
    let settled = sql
        .execute(
            // A success needs its confirmation in the same statement's history row
            // (0069_evidence.sql): the seeding settles as an operator stating why.
            "WITH moved AS (
                 UPDATE operations SET status = 'succeeded'
                 WHERE tenant_id = $1 AND status = 'in_progress'
                 RETURNING operation_id, tenant_id, fence)
             INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor, evidence)
             SELECT operation_id, tenant_id, 'transition', 'in_progress', 'succeeded', fence, 'operator:seed',
                    '{\"confirmed\": {\"by\": \"operator\", \"evidence\": \"seeded history\"}}'
             FROM moved",
            &[&TENANT],
        )
        .await
        .unwrap();
    assert_eq!(settled, count as u64);
}

/// A seeding step: `count` more payments to `payee` on `account` of `amount_minor`.
struct Seed {
    count: i64,
    payee: &'static str,
    account: Option<&'static str>,
    amount_minor: i64,
    /// Made before every payment seeded so far (and settled now).
    made_first: bool,
}

/// A row of the table: what it shows, what is settled first, then the payee, the account
/// and the amount of the payment judged, and the codes of its cues.
type Step = (
    &'static str,
    Option<Seed>,
    &'static str,
    &'static str,
    i64,
    &'static [&'static str],
);

/// The codes of the cues of a payment of `amount_minor` KZT to `payee`, whose account the
/// directory now says is `account`, judged by the store's read and the core's rule.
async fn judged(fleet: &TestFleet, payee: &str, account: &str, amount_minor: i64) -> Vec<Value> {
    let paid = fleet
        .store
        .paid_before(TENANT, payee, Some(account), "KZT")
        .await
        .unwrap();
    let asked = PaymentAsked {
        operation_id: "op_judged",
        supersedes: None,
        beneficiary_id: payee,
        invoice_id: "inv_judged",
        amount_minor,
        currency: "KZT",
    };
    let now = PayeeNow {
        known: true,
        verified: Some(true),
        account_fingerprint: Some(account.to_owned()),
    };
    cues(asked, &now, &paid, 3)
        .iter()
        .map(|c: &RiskCue| serde_json::to_value(c).unwrap())
        .collect()
}

fn codes(cues: &[Value]) -> Vec<&str> {
    cues.iter().map(|c| c["cue"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn the_cues_walk_the_aggregates_the_success_trigger_keeps() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let seed = |count, payee, account, amount_minor| {
        Some(Seed {
            count,
            payee,
            account,
            amount_minor,
            made_first: false,
        })
    };
    let made_first = |payee, account| {
        Some(Seed {
            count: 1,
            payee,
            account,
            amount_minor: 1_000,
            made_first: true,
        })
    };
    // Each row: seed (then) judge a payment to (payee, account, amount) → cues.
    #[rustfmt::skip]
    let table: [Step; 12] = [
        ("nothing paid yet",
         None, "vendor_77", "sha256:a", 1_000, &["first_payment_to_payee", "first_payment_to_account"]),
        ("paid once on account a",
         seed(1, "vendor_77", Some("sha256:a"), 1_000), "vendor_77", "sha256:a", 1_000, &[]),
        ("the account changes to b: flagged before its first payment",
         None, "vendor_77", "sha256:b", 1_000, &["first_payment_to_account", "account_changed_since_last_payment"]),
        ("the first payment on b settled: stable",
         seed(1, "vendor_77", Some("sha256:b"), 1_000), "vendor_77", "sha256:b", 1_000, &[]),
        ("1,500 payments on b: still stable",
         seed(1_499, "vendor_77", Some("sha256:b"), 1_000), "vendor_77", "sha256:b", 1_000, &[]),
        ("a payment the directory named no account for does not change the last account",
         seed(1, "vendor_77", None, 1_000), "vendor_77", "sha256:b", 1_000, &[]),
        ("a payment on a made before all of them, settled only now: b is still the last account",
         made_first("vendor_77", Some("sha256:a")), "vendor_77", "sha256:b", 1_000, &[]),
        ("2,000 payments on b, the latest 500 of 10,000: the usual amount is the latest one",
         seed(500, "vendor_77", Some("sha256:b"), 10_000), "vendor_77", "sha256:b", 30_000, &[]),
        ("above 3× the latest amounts' median",
         None, "vendor_77", "sha256:b", 30_001, &["amount_above_usual"]),
        ("swapped back to a, last used 2,000 payments ago: a change, not a first account",
         None, "vendor_77", "sha256:a", 10_000, &["account_changed_since_last_payment"]),
        ("after 1,000 payments to other payees, a new payee on a new account",
         seed(1_000, "*", Some("sha256:others"), 1_000), "vendor_new", "sha256:c", 1_000,
         &["first_payment_to_payee", "first_payment_to_account"]),
        ("a new payee on an account paid before",
         None, "vendor_new", "sha256:others", 1_000, &["first_payment_to_payee"]),
    ];
    let mut next = 1;
    for (step, seed, payee, account, amount_minor, expected) in table {
        if let Some(s) = seed {
            if s.made_first {
                settle(&sql, 1_000_000, 1, s.payee, s.account, s.amount_minor).await;
            } else {
                settle(&sql, next, s.count, s.payee, s.account, s.amount_minor).await;
                next += s.count;
            }
        }
        let found = judged(&fleet, payee, account, amount_minor).await;
        assert_eq!(codes(&found), expected, "{step}: {found:?}");
        if expected.contains(&"amount_above_usual") {
            assert_eq!(found[0]["median_minor"], 10_000, "{step}");
        }
    }
    // The aggregates are the history's: every payment counted once, on the payee and the
    // account it was made to.
    let row = sql
        .query_one(
            "SELECT p.payments, a.payments, b.payments, cardinality(m.latest_amounts)
             FROM paid_payees p, paid_accounts a, paid_accounts b, paid_payee_amounts m
             WHERE p.tenant_id = $1 AND p.beneficiary_id = 'vendor_77'
               AND a.tenant_id = $1 AND a.account_fingerprint = 'sha256:a'
               AND b.tenant_id = $1 AND b.account_fingerprint = 'sha256:b'
               AND m.tenant_id = $1 AND m.beneficiary_id = 'vendor_77' AND m.currency = 'KZT'",
            &[&TENANT],
        )
        .await
        .unwrap();
    let counts: (i64, i64, i64, i32) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(counts, (2_003, 2, 2_000, 100));
    fleet.stop().await;
}

/// The pages the store's read touches for a payment to `vendor_77` on `sha256:a`, as the
/// plan the server caches for it (`generic`) or one planned for these values, and the rows
/// it returns.
async fn pages_read(sql: &tokio_postgres::Client, generic: bool) -> (i64, i64) {
    let top = fleet_tests::read_plan(
        sql,
        generic,
        &format!(
            "PREPARE paid_before(text, text, text, text) AS {}",
            fleet_store::PAID_BEFORE
        ),
        "EXECUTE paid_before('org_risk', 'vendor_77', 'sha256:a', 'KZT')",
    )
    .await;
    (
        fleet_tests::pages_of(&top),
        top["Actual Rows"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn intake_reads_the_same_pages_after_10_or_10_000_payments() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    settle(&sql, 1, 10, "vendor_77", Some("sha256:a"), 1_000).await;
    let after_10 = [pages_read(&sql, false).await, pages_read(&sql, true).await];
    // The rest of the history in many statements, each a success recorded on its own rows.
    let mut next = 11;
    for _ in 0..9 {
        settle(&sql, next, 1_110, "vendor_77", Some("sha256:a"), 1_000).await;
        next += 1_110;
    }
    assert_eq!(next - 1, 10_000);
    let after_10_000 = [pages_read(&sql, false).await, pages_read(&sql, true).await];
    for (few, many) in after_10.iter().zip(&after_10_000) {
        assert_eq!(few.1, 1, "one row: the payee, its amounts and the account");
        assert_eq!(many, few, "pages read after 10 payments, then after 10,000");
        assert!(few.0 <= 9, "three primary-key lookups: {} pages", few.0);
    }
    // The read judged the 10,000 (the plans were of a read that found them).
    let paid = fleet
        .store
        .paid_before(TENANT, "vendor_77", Some("sha256:a"), "KZT")
        .await
        .unwrap();
    assert_eq!(
        (paid.payments_to_payee, paid.payments_to_account),
        (10_000, 10_000)
    );
    fleet.stop().await;
}

/// Inserts payment `n` to `payee` on `account` of `amount_minor` KZT, in progress, made
/// `made_s` seconds after the 90-days-ago mark (its insert triggers off, as [`settle`]'s).
async fn in_progress(
    sql: &tokio_postgres::Client,
    n: i64,
    payee: &str,
    account: Option<&str>,
    amount_minor: i64,
    made_s: i64,
) {
    sql.batch_execute("SET session_replication_role = replica")
        .await
        .unwrap();
    let inserted = sql
        .execute(
            "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at,
                                     status, approval_status, approved_hash, payee, created_at)
             VALUES ('op_' || lpad($2::int8::text, 24, '0'), $1, 'payment.create', 'payments',
                     jsonb_build_object('invoice_id', 'inv_' || $2::int8, 'beneficiary_id', $3::text,
                                        'amount_minor', $5::bigint, 'currency', 'KZT'),
                     'sha256:' || repeat('0', 64), 'payments-v3', 'd', $1 || '.op_' || $2::int8,
                     now() + interval '1 hour', 'in_progress', 'approved', 'sha256:' || repeat('0', 64),
                     CASE WHEN $4::text IS NULL THEN NULL
                          ELSE jsonb_build_object('account', jsonb_build_object('fingerprint', $4::text)) END,
                     now() - interval '90 days' + $6::int8 * interval '1 second')",
            &[&TENANT, &n, &payee, &account, &amount_minor, &made_s],
        )
        .await;
    assert_eq!(inserted.unwrap(), 1);
    sql.batch_execute("SET session_replication_role = origin")
        .await
        .unwrap();
}

/// Records payment `n`'s success with a statement of its own, as the execute worker
/// records each answer.
async fn settle_one(sql: &tokio_postgres::Client, n: i64) {
    let settled = sql
        .execute(
            "WITH moved AS (
                 UPDATE operations SET status = 'succeeded'
                 WHERE tenant_id = $1 AND operation_id = 'op_' || lpad($2::int8::text, 24, '0')
                   AND status = 'in_progress'
                 RETURNING operation_id, tenant_id, fence)
             INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor, evidence)
             SELECT operation_id, tenant_id, 'transition', 'in_progress', 'succeeded', fence, 'operator:seed',
                    '{\"confirmed\": {\"by\": \"operator\", \"evidence\": \"recorded one by one\"}}'
             FROM moved",
            &[&TENANT, &n],
        )
        .await
        .unwrap();
    assert_eq!(settled, 1, "payment {n} recorded");
}

/// What the aggregates of `payee` say (payments, last account, its latest times and
/// amounts in KZT, the payments to each of its accounts), beside the same read off the
/// succeeded payments themselves, both as text.
async fn aggregates_and_history(sql: &tokio_postgres::Client, payee: &str) -> (String, String) {
    let row = sql
        .query_one(
            "WITH paid AS (
                 SELECT created_at AS at, operation_id, payee #>> '{account,fingerprint}' AS account,
                        (payload ->> 'amount_minor')::bigint AS amount
                 FROM operations
                 WHERE tenant_id = $1 AND payload ->> 'beneficiary_id' = $2 AND status = 'succeeded'),
             latest AS (SELECT at, amount FROM paid ORDER BY at DESC, amount DESC LIMIT 100)
             SELECT (SELECT format('%s %s %s %s', p.payments, p.last_account_fingerprint,
                                   a.latest_at, a.latest_amounts)
                     FROM paid_payees p JOIN paid_payee_amounts a USING (tenant_id, beneficiary_id)
                     WHERE p.tenant_id = $1 AND p.beneficiary_id = $2 AND a.currency = 'KZT')
                    || ' ' || (SELECT string_agg(format('%s:%s', c.account_fingerprint, c.payments), ','
                                                 ORDER BY c.account_fingerprint)
                               FROM paid_accounts c WHERE c.tenant_id = $1
                                 AND c.account_fingerprint IN (SELECT account FROM paid)),
                    format('%s %s %s %s', (SELECT count(*) FROM paid),
                           (SELECT account FROM paid WHERE account IS NOT NULL
                            ORDER BY at DESC, operation_id DESC LIMIT 1),
                           (SELECT array_agg(at ORDER BY at DESC, amount DESC) FROM latest),
                           (SELECT array_agg(amount ORDER BY at DESC, amount DESC) FROM latest))
                    || ' ' || (SELECT string_agg(format('%s:%s', account, n), ',' ORDER BY account)
                               FROM (SELECT account, count(*) AS n FROM paid
                                     WHERE account IS NOT NULL GROUP BY 1) c)",
            &[&TENANT, &payee],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test]
async fn successes_recorded_one_by_one_in_any_order_keep_what_the_history_says() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    // 150 payments, three made in each second and some of the same time and amount, on
    // three accounts and some on none; recorded one statement each, in a scrambled order:
    // each then lands before the kept amounts, among them, or after all 100.
    const PAYMENTS: i64 = 150;
    for n in 1..=PAYMENTS {
        let account = ["sha256:o1", "sha256:o2", "sha256:o3"]
            .get((n % 4) as usize)
            .copied();
        in_progress(&sql, n, "vendor_order", account, 1_000 * (n * 7 % 4), n / 3).await;
    }
    for k in 0..PAYMENTS {
        settle_one(&sql, 1 + k * 47 % PAYMENTS).await;
        if k % 10 == 9 || k < 3 {
            let (kept, history) = aggregates_and_history(&sql, "vendor_order").await;
            assert_eq!(kept, history, "after {} recorded", k + 1);
        }
    }
    let (kept, _) = aggregates_and_history(&sql, "vendor_order").await;
    assert!(kept.starts_with("150 sha256:o"), "{kept}");
    fleet.stop().await;
}

#[tokio::test]
async fn two_transactions_recording_successes_to_one_new_payee_both_count() {
    let fleet = TestFleet::start().await;
    let first = fleet.sql().await;
    let second = fleet.sql().await;
    // The second transaction's payment was made before the first's: it goes behind it
    // in the kept amounts, and the first's account stays the last.
    in_progress(&first, 1, "vendor_race", Some("sha256:r1"), 2_000, 20).await;
    in_progress(&first, 2, "vendor_race", Some("sha256:r2"), 1_000, 10).await;
    first.batch_execute("BEGIN").await.unwrap();
    settle_one(&first, 1).await;
    let pid: i32 = second
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let recording = tokio::spawn(async move {
        second.batch_execute("BEGIN").await.unwrap();
        settle_one(&second, 2).await;
        second.batch_execute("COMMIT").await.unwrap();
        second
    });
    let observer = fleet.sql().await;
    eventually("the second recording to wait for the first's new payee row", || {
        let observer = &observer;
        async move {
            let r = observer
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
                    &[&pid],
                )
                .await
                .unwrap();
            (r.get::<_, i64>(0) == 1).then_some(())
        }
    })
    .await;
    assert!(!recording.is_finished(), "the second recording waits");
    first.batch_execute("COMMIT").await.unwrap();
    let second = recording.await.expect("the second recording");

    let (kept, history) = aggregates_and_history(&second, "vendor_race").await;
    assert_eq!(kept, history);
    let row = second
        .query_one(
            "SELECT p.payments, p.last_account_fingerprint, a.latest_amounts
             FROM paid_payees p JOIN paid_payee_amounts a USING (tenant_id, beneficiary_id)
             WHERE p.tenant_id = $1 AND p.beneficiary_id = 'vendor_race' AND a.currency = 'KZT'",
            &[&TENANT],
        )
        .await
        .unwrap();
    let counted: (i64, String, Vec<i64>) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(counted, (2, "sha256:r1".to_owned(), vec![2_000, 1_000]));
    fleet.stop().await;
}
