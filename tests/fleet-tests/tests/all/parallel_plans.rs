//! The fleet's sessions plan no parallel workers. On a table with a long history and no
//! statistics (the fleet analyses nothing; the server may run no autovacuum), the planner
//! guesses that a partial index matches a large share of the table and, left to itself,
//! plans a parallel scan: every execution then starts server processes, on a machine the
//! fleet keeps busy, to read a few rows.

use fleet_tests::TestFleet;
use serde_json::Value;

/// Every node type of the plan under `node`.
fn node_types(node: &Value, out: &mut Vec<String>) {
    out.push(node["Node Type"].as_str().unwrap_or_default().to_owned());
    for child in node["Plans"].as_array().into_iter().flatten() {
        node_types(child, out);
    }
}

/// The node types of the gauges' plan, as `session` plans it.
async fn gauges_plan(session: &tokio_postgres::Client) -> Vec<String> {
    let plan: Value = session
        .query_one(
            &format!("EXPLAIN (FORMAT JSON) {}", fleet_store::FLEET_GAUGES),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let mut types = Vec::new();
    node_types(&plan[0]["Plan"], &mut types);
    types
}

#[tokio::test]
async fn the_gauges_over_a_long_unanalysed_history_start_no_parallel_workers() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    // A history of 300,000 payments (rows about as wide as a fleet's), written in bulk and
    // never analysed.
    let seeded = fleet_tests::seeded_with_triggers_off(
        &sql,
        "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                 policy_version, data_version, idempotency_key, approval_expires_at,
                                 created_at)
         SELECT 'op_5' || lpad(i::text, 25, '0'), 'org_482', 'payment.create', 'payments',
                jsonb_build_object('invoice_id', 'i' || i, 'beneficiary_id', 'vendor_' || (i % 1000),
                                   'amount_minor', 1000 + i, 'currency', 'KZT',
                                   'memo', repeat('m', 400)),
                'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_5' || lpad(i::text, 25, '0'),
                now() + interval '1 hour', now() - interval '100 days' + i * interval '1 minute'
         FROM generate_series(1, 300000) i",
        &[],
    )
    .await;
    assert_eq!(seeded, 300_000);

    let session = fleet.store.pooled_session().await.unwrap();
    let workers: String = session
        .query_one("SHOW max_parallel_workers_per_gather", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        workers, "0",
        "the fleet's sessions start no parallel workers"
    );
    let plan = gauges_plan(&session).await;
    assert!(
        !plan.iter().any(|t| t.starts_with("Gather")),
        "the gauges are read by the session alone: {plan:?}"
    );

    // The same session allowed the server's default: the history is long enough that the
    // planner would start workers, so the assertion above is the setting's doing.
    session
        .batch_execute("SET max_parallel_workers_per_gather = 2")
        .await
        .unwrap();
    let allowed = gauges_plan(&session).await;
    session
        .batch_execute("RESET max_parallel_workers_per_gather")
        .await
        .unwrap();
    assert!(
        allowed.iter().any(|t| t.starts_with("Gather")),
        "with workers allowed, the planner would start them here: {allowed:?}"
    );
    fleet.stop().await;
}
