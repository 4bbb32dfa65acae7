//! What a read's plan touches: the store's statement prepared as the server would cache it
//! (a generic plan, with the fleet's session settings) or planned for the values given,
//! run once under `EXPLAIN (ANALYZE, BUFFERS)`.

use serde_json::Value;

/// The top node of the plan of `execute` (an `EXECUTE` of the statement `prepare`
/// prepares), run once: a generic plan when `generic`, one planned for the values
/// otherwise; sequential scans off, no JIT and no parallel workers, as the fleet's sessions.
pub async fn read_plan(
    sql: &tokio_postgres::Client,
    generic: bool,
    prepare: &str,
    execute: &str,
) -> Value {
    let mode = if generic {
        "force_generic_plan"
    } else {
        "force_custom_plan"
    };
    sql.batch_execute(&format!(
        "SET plan_cache_mode = {mode}; SET enable_seqscan = off; SET jit = off;
         SET max_parallel_workers_per_gather = 0; DEALLOCATE ALL; {prepare}"
    ))
    .await
    .unwrap();
    let plan: Value = sql
        .query_one(
            &format!("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {execute}"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    plan[0]["Plan"].clone()
}

/// The shared pages a plan node touched, found in memory or read.
pub fn pages_of(node: &Value) -> i64 {
    node["Shared Hit Blocks"].as_i64().unwrap() + node["Shared Read Blocks"].as_i64().unwrap()
}

/// The scans of `operations` in `plan` (EXPLAIN's JSON), as (node type, index name): the
/// scans of the table and the bitmap index scans of its indexes.
pub fn operations_scans(plan: &serde_json::Value, out: &mut Vec<(String, Option<String>)>) {
    let node_type = plan["Node Type"].as_str().unwrap_or_default();
    let index = plan["Index Name"].as_str().map(str::to_owned);
    let of_operations = plan["Relation Name"] == "operations" && node_type != "ModifyTable";
    let bitmap_of_operations = node_type == "Bitmap Index Scan"
        && index
            .as_deref()
            .is_some_and(|i| i.starts_with("operations_"));
    if of_operations || bitmap_of_operations {
        out.push((node_type.to_owned(), index));
    }
    for child in plan["Plans"].as_array().into_iter().flatten() {
        operations_scans(child, out);
    }
}
