//! Rows written straight into the bench database with `INSERT … SELECT generate_series`
//! (seconds for a million rows): the history of final operations a long-lived fleet
//! accumulates, unknown rows for the sweeper, and approved rows ready to be claimed.
//!
//! Operation ids are `op_<kind digit><25 digits>` (valid for the table's CHECK and never
//! equal to a ULID the bench generates at run time, whose timestamp starts with `01`):
//! kind `0` history, `1` unknown, `2`+ ready-to-claim sets.

use super::load::APPROVER;
use super::sql::BenchSql;

/// Rows per INSERT statement: bounds each transaction.
const CHUNK: i64 = 100_000;

pub const HISTORY_TENANT: &str = "org_history";

/// The operation id of row `i` of kind `kind` (0–7).
pub fn op_id(kind: u8, i: i64) -> String {
    format!("op_{kind}{i:025}")
}

/// Columns and values shared by every seeded operation; `$3` is the tenant, `i` the row number,
/// `id` its operation id, `h` its payload hash, `t` its creation time.
const SNAPSHOT_COLUMNS: &str = "operation_id, tenant_id, action, provider, payload, payload_hash, policy_version, data_version, \
     idempotency_key, approval_status, approval_expires_at, approved_hash, decided_by, decided_at";
const SNAPSHOT_VALUES: &str = "id, $3, 'payment.create', 'payments', \
     jsonb_build_object('invoice_id', 'inv_s' || i, 'beneficiary_id', 'vendor_' || (1 + i % 9), \
                        'amount_minor', 10000 + (i * 7919) % 990000, 'currency', 'USD'), \
     h, 'payments-v3', 'inv_s' || i || '@1', id, 'approved', t + interval '1 hour', h, 'bench-seed', t + interval '1 second'";

fn rows_from(kind: u8, created: &str) -> String {
    format!(
        "FROM (SELECT i, 'op_{kind}' || lpad(i::text, 25, '0') AS id,
                      'sha256:' || md5(i::text) || md5('h' || i::text) AS h, {created} AS t
               FROM generate_series($1::int8, $2::int8) AS i) s"
    )
}

/// Runs `operations` and then `children` (parameters of both: first row, last row, tenant)
/// over `1..=count`, one transaction per [`CHUNK`] rows.
async fn chunked(
    sql: &BenchSql,
    count: i64,
    tenant: &str,
    operations: &str,
    children: &[String],
) -> anyhow::Result<()> {
    let mut from = 1;
    while from <= count {
        let to = (from + CHUNK - 1).min(count);
        let mut client = sql.client().await?;
        let tx = client.transaction().await?;
        // Seeded rows stand for history whose outcome events went out and were pruned long
        // ago: the outbox trigger (like every ordinary trigger) stays off for the bulk load.
        tx.batch_execute("SET LOCAL session_replication_role = replica")
            .await?;
        tx.execute(operations, &[&from, &to, &tenant]).await?;
        for child in children {
            tx.execute(child.as_str(), &[&from, &to, &tenant]).await?;
        }
        tx.commit().await?;
        from = to + 1;
    }
    Ok(())
}

/// `count` succeeded payments from a month ago, each with its attempt and the four
/// events of the happy path (prepared, approved, claimed, succeeded).
pub async fn history(sql: &BenchSql, count: i64) -> anyhow::Result<()> {
    let from = rows_from(
        0,
        "now() - interval '30 days' + i * interval '1 millisecond'",
    );
    let operations = format!(
        "INSERT INTO operations ({SNAPSHOT_COLUMNS}, status, fence, attempts, external_id, resolved_at, created_at, updated_at)
         SELECT {SNAPSHOT_VALUES}, 'succeeded', 1, 1, 'pay_s' || i, t + interval '2 seconds', t, t + interval '2 seconds' {from}"
    );
    let attempts = format!(
        "INSERT INTO attempts (operation_id, tenant_id, fence, worker, started_at, finished_at, outcome, http_status, replayed, external_id)
         SELECT id, $3, 1, 'bench-seed', t + interval '1 second', t + interval '2 seconds', 'succeeded', 200, false, 'pay_s' || i
         {from}"
    );
    let events = format!(
        "INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor, at)
         SELECT id, $3, e.kind, e.from_status, e.to_status, e.fence, e.actor, t + e.after
         {from} CROSS JOIN (VALUES
             ('prepared', NULL, NULL, 0, 'prepare', interval '0'),
             ('approved', NULL, NULL, 0, 'approver:bench-seed', interval '1 second'),
             ('transition', 'not_started', 'in_progress', 1, 'execute', interval '1 second'),
             ('transition', 'in_progress', 'succeeded', 1, 'execute', interval '2 seconds')
         ) AS e(kind, from_status, to_status, fence, actor, after)
        "
    );
    // The success trigger is off with the others: the payments are counted in the risk
    // aggregates as it would have counted them, so intake judges them as history.
    let paid = format!(
        "SELECT fleet_count_paid(ARRAY(
             SELECT fleet_paid_payment(o) FROM operations o
             WHERE o.tenant_id = $3 AND o.operation_id IN (SELECT id {from})))"
    );
    chunked(
        sql,
        count,
        HISTORY_TENANT,
        &operations,
        &[attempts, events, paid],
    )
    .await
}

/// `count` unknown, unescalated rows due for a lookup, each with its unanswered attempt.
pub async fn unknown(sql: &BenchSql, count: i64) -> anyhow::Result<()> {
    let from = rows_from(
        1,
        "now() - interval '10 minutes' + i * interval '1 millisecond'",
    );
    let operations = format!(
        "INSERT INTO operations ({SNAPSHOT_COLUMNS}, status, fence, attempts, unknown_since, created_at, updated_at)
         SELECT {SNAPSHOT_VALUES}, 'unknown', 1, 1, t + interval '2 seconds', t, t + interval '2 seconds' {from}"
    );
    let attempts = format!(
        "INSERT INTO attempts (operation_id, tenant_id, fence, worker, started_at, outcome, detail)
         SELECT id, $3, 1, 'bench-seed', t + interval '1 second', 'unknown', 'timeout' {from}"
    );
    chunked(sql, count, "org_unknown", &operations, &[attempts]).await
}

/// The tenant of the rows [`ready`] seeds.
pub const READY_TENANT: &str = "org_ready";

/// `count` approved, unexpired rows waiting to be claimed (fence 0), of kind `kind`.
pub async fn ready(sql: &BenchSql, kind: u8, count: i64) -> anyhow::Result<Vec<String>> {
    let from = rows_from(kind, "now()");
    let operations = format!(
        "INSERT INTO operations ({SNAPSHOT_COLUMNS}, status, created_at, updated_at)
         SELECT {SNAPSHOT_VALUES}, 'not_started', t, t {from}"
    );
    // The approval behind each row: execute's claim counts it.
    let approvals = format!(
        "INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, at)
         SELECT id, $3, 'bench-seed', 'token', h, t {from}"
    );
    chunked(sql, count, READY_TENANT, &operations, &[approvals]).await?;
    Ok((1..=count).map(|i| op_id(kind, i)).collect())
}

/// Fresh planner statistics and visibility maps, as autovacuum would leave them.
pub async fn vacuum_analyze(sql: &BenchSql) -> anyhow::Result<()> {
    sql.client()
        .await?
        .batch_execute("VACUUM ANALYZE operations, attempts, operation_events")
        .await?;
    Ok(())
}

/// Days of history [`lived_history`] spreads its operations over.
pub const LIVED_DAYS: i64 = 100;
/// The payee every tenth operation of [`lived_history`] pays: one of the bench's own
/// payees, so the run's intents meet its history.
pub const HOT_PAYEE: &str = "vendor_1";
/// [`lived_history`] leaves published outcome events for this many days (a relay whose
/// `OUTBOX_RETENTION_S` was ten days), and webhook dedup rows for this many (a
/// receiver whose `WEBHOOK_RETENTION_S` was forty days).
pub const LIVED_OUTBOX_DAYS: i64 = 10;
pub const LIVED_WEBHOOK_DAYS: i64 = 40;

/// `count` succeeded payments of `tenant` over the last [`LIVED_DAYS`] days (the newest an
/// hour old), as the fleet leaves them: each with its approval, its attempt, its four
/// history rows numbered as the trigger numbers them, and, for the last
/// [`LIVED_OUTBOX_DAYS`] days, its four published outcome events; one in ten has a
/// webhook dedup row (the last [`LIVED_WEBHOOK_DAYS`] days). Every tenth pays
/// [`HOT_PAYEE`]; the others spread over ten thousand payees. The risk aggregates count
/// every payment as the success trigger would have. Nothing is analysed or vacuumed
/// afterwards: the fleet does neither, and the image's Postgres runs no autovacuum.
pub async fn lived_history(sql: &BenchSql, tenant: &str, count: i64) -> anyhow::Result<()> {
    let from = format!(
        "FROM (SELECT i, 'op_0' || lpad(i::text, 25, '0') AS id,
                      'sha256:' || md5(i::text) || md5('h' || i::text) AS h,
                      now() - interval '1 hour'
                          - make_interval(secs => {secs}.0 * ({count} - i) / {count}) AS t,
                      CASE WHEN i % 10 = 0 THEN '{HOT_PAYEE}' ELSE 'vendor_' || (2 + i % 9973) END AS payee,
                      (ARRAY['USD', 'EUR', 'KZT'])[1 + i % 3] AS currency
               FROM generate_series($1::int8, $2::int8) AS i) s",
        secs = LIVED_DAYS * 86_400,
    );
    let operations = format!(
        "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash, policy_version,
                                 data_version, idempotency_key, approval_status, approval_expires_at, approved_hash,
                                 decided_by, decided_at, submitted_by, status, fence, attempts, external_id,
                                 resolved_at, created_at, updated_at)
         SELECT id, $3, 'payment.create', 'payments',
                jsonb_build_object('invoice_id', 'inv_h' || i, 'beneficiary_id', payee,
                                   'amount_minor', 10000 + (i * 7919) % 990000, 'currency', currency),
                h, 'payments-v3', 'inv_h' || i || '@1', id, 'approved', t + interval '1 hour', h,
                '{APPROVER}', t + interval '40 milliseconds', 'bench-agent', 'succeeded', 1, 1, 'pay_h' || i,
                t + interval '70 milliseconds', t, t + interval '70 milliseconds'
         {from}"
    );
    let approvals = format!(
        "INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, at)
         SELECT id, $3, '{APPROVER}', 'token', h, t + interval '40 milliseconds' {from}"
    );
    let attempts = format!(
        "INSERT INTO attempts (operation_id, tenant_id, fence, worker, started_at, finished_at, outcome,
                               http_status, replayed, external_id, request_sent)
         SELECT id, $3, 1, 'fleet-execute', t + interval '50 milliseconds', t + interval '70 milliseconds',
                'succeeded', 201, false, 'pay_h' || i, true
         {from}"
    );
    let events = format!(
        "INSERT INTO operation_events (operation_id, tenant_id, kind, from_status, to_status, fence, actor,
                                       signed_in_with, event_sequence, at)
         SELECT id, $3, e.kind, e.from_status, e.to_status, e.fence, e.actor, e.signed_in_with, e.seq, t + e.after
         {from} CROSS JOIN (VALUES
             ('prepared', NULL, NULL, NULL::int8, 'prepare', NULL, 1, interval '0'),
             ('approved', NULL, NULL, NULL, 'approver:{APPROVER}', 'token', 2, interval '40 milliseconds'),
             ('transition', 'not_started', 'in_progress', 1, 'execute', NULL, 3, interval '50 milliseconds'),
             ('transition', 'in_progress', 'succeeded', 1, 'execute', NULL, 4, interval '70 milliseconds')
         ) AS e(kind, from_status, to_status, fence, actor, signed_in_with, seq, after)"
    );
    // The events the outbox trigger would have written, as the relay marks them once the
    // broker confirmed them.
    let outbox = format!(
        "INSERT INTO operation_outbox (operation_id, event_key, sequence, event_type, tenant_id, history_id,
                                       occurred_at, data, published_at)
         SELECT o.operation_id, o.idempotency_key, e.event_sequence,
                outcome_event_type(e.kind, e.to_status, e.actor, e.reason), o.tenant_id, e.id, e.at,
                operation_view(o) || jsonb_build_object('sequence', e.event_sequence),
                e.at + interval '30 milliseconds'
         FROM operations o JOIN operation_events e USING (operation_id, tenant_id)
         WHERE o.tenant_id = $3 AND o.operation_id IN (SELECT id {from})
           AND o.created_at >= now() - interval '{LIVED_OUTBOX_DAYS} days'"
    );
    let webhooks = format!(
        "INSERT INTO webhook_events (provider, event_id, event_type, received_at, operation_id, tenant_id,
                                     payload_hash, outcome, applied_at, object_id)
         SELECT 'payments', 'evt_h' || i, 'payment.succeeded', t + interval '1 second', id, $3, h,
                'ignored_transition', t + interval '1 second', 'pay_h' || i
         {from} WHERE i % 10 = 5 AND t >= now() - interval '{LIVED_WEBHOOK_DAYS} days'"
    );
    let paid = format!(
        "SELECT fleet_count_paid(ARRAY(
             SELECT fleet_paid_payment(o) FROM operations o
             WHERE o.tenant_id = $3 AND o.operation_id IN (SELECT id {from})
             ORDER BY o.created_at))"
    );
    chunked(
        sql,
        count,
        tenant,
        &operations,
        &[approvals, attempts, events, outbox, webhooks, paid],
    )
    .await
}
