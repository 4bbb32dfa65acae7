//! What the rows say once the run is over: final states, the measured window, and
//! latency percentiles computed in SQL (`percentile_cont`) from the database's own
//! timestamps: `decided_at` (approval), the first `attempts.started_at` (claim),
//! `resolved_at` (final), and, in execute mode, the bench's record of when it rang each
//! bell (`bench_bells`, written after the closing readings).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::load::TENANT;
use super::sql::BenchSql;

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    pub count: i64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowFigures {
    pub statuses: BTreeMap<String, i64>,
    /// Latest `resolved_at` of the bench's operations.
    pub last_final_at: Option<DateTime<Utc>>,
    pub approve_to_final: Percentiles,
    /// Pipeline mode: approve → final of the operations approved once the workers'
    /// first seconds are over ([`WARM_UP`] after the window's first approval).
    pub approve_to_final_warm: Option<Percentiles>,
    pub claim_to_final: Percentiles,
    /// Execute mode: from the bench's publish of the bell to final.
    pub ring_to_final: Option<Percentiles>,
    /// Pipeline mode: from the prepare insert to the approval (the bench's approver lag).
    pub prepared_to_approved: Percentiles,
    /// Operations that became final in each whole second of the run.
    pub finals_per_second: Vec<i64>,
}

/// Percentiles of `ms_expr` (milliseconds, per row of `from`; `$1` is the tenant, `$2`
/// the start of the run).
async fn percentiles(
    sql: &BenchSql,
    ms_expr: &str,
    from: &str,
    since: DateTime<Utc>,
) -> anyhow::Result<Percentiles> {
    let query = format!(
        "SELECT count(*), percentile_cont(ARRAY[0.5, 0.95, 0.99]::float8[]) WITHIN GROUP (ORDER BY ms), max(ms)
         FROM (SELECT ({ms_expr})::float8 AS ms {from}) t WHERE ms IS NOT NULL"
    );
    let r = sql
        .client()
        .await?
        .query_one(&query, &[&TENANT, &since])
        .await?;
    let p: Option<Vec<f64>> = r.get(1);
    let p = p.unwrap_or_default();
    let at = |i: usize| p.get(i).copied().unwrap_or(0.0);
    Ok(Percentiles {
        count: r.get(0),
        p50_ms: at(0),
        p95_ms: at(1),
        p99_ms: at(2),
        max_ms: r.get::<_, Option<f64>>(2).unwrap_or(0.0),
    })
}

/// The workers' first seconds, which every window pays once: each new connection of a
/// worker plans its statements and compiles the database's trigger functions the first
/// time it runs them (tens of milliseconds per statement, docs/benchmark.md), so the
/// operations approved then wait for that and not for what the fleet's steady work costs.
/// A window of 20 s at 60 a second has its p99 in its 12 slowest operations, which that
/// start alone can supply; a run of minutes dilutes it below the p99.
pub const WARM_UP: std::time::Duration = std::time::Duration::from_secs(2);

/// How the figures without [`WARM_UP`] are labelled, as a literal so that every table's
/// label can be built with `concat!` (a unit test keeps it equal to `WARM_UP`).
macro_rules! after_warm_up {
    () => {
        "after the first 2 s"
    };
}
pub(crate) use after_warm_up;

fn ms(interval: &str) -> String {
    format!("EXTRACT(EPOCH FROM {interval}) * 1000")
}

/// Keeps the bench's bell times next to the rows (after the closing readings, so this
/// write is not counted).
pub async fn record_bells(sql: &BenchSql, bells: &[(String, DateTime<Utc>)]) -> anyhow::Result<()> {
    let client = sql.client().await?;
    client.batch_execute("CREATE TABLE IF NOT EXISTS bench_bells (operation_id text PRIMARY KEY, rung_at timestamptz NOT NULL)").await?;
    let ids: Vec<&str> = bells.iter().map(|(id, _)| id.as_str()).collect();
    let at: Vec<DateTime<Utc>> = bells.iter().map(|(_, t)| *t).collect();
    client
        .execute(
            "INSERT INTO bench_bells SELECT * FROM unnest($1::text[], $2::timestamptz[])",
            &[&ids, &at],
        )
        .await?;
    Ok(())
}

/// The figures of the operations the run created (since `since`): seeded history of the
/// same tenant is older and left out.
pub async fn read(
    sql: &BenchSql,
    with_bells: bool,
    since: DateTime<Utc>,
) -> anyhow::Result<RowFigures> {
    let client = sql.client().await?;
    let mut statuses = BTreeMap::new();
    for r in client
        .query(
            "SELECT status, count(*) FROM operations WHERE tenant_id = $1 AND created_at >= $2 GROUP BY 1",
            &[&TENANT, &since],
        )
        .await?
    {
        statuses.insert(r.get::<_, String>(0), r.get::<_, i64>(1));
    }
    let last_final_at: Option<DateTime<Utc>> = client
        .query_one(
            "SELECT max(resolved_at) FROM operations WHERE tenant_id = $1 AND created_at >= $2",
            &[&TENANT, &since],
        )
        .await?
        .get(0);
    let finals_per_second: Vec<i64> = client
        .query(
            "SELECT count(*) FROM operations WHERE tenant_id = $1 AND created_at >= $2 AND resolved_at IS NOT NULL
             GROUP BY date_trunc('second', resolved_at) ORDER BY date_trunc('second', resolved_at)",
            &[&TENANT, &since],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    drop(client);
    let ops = "FROM operations o WHERE o.tenant_id = $1 AND o.created_at >= $2";
    let approve_to_final = ms("o.resolved_at - o.decided_at");
    let first_claim =
        "(SELECT min(a.started_at) FROM attempts a WHERE a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id)";
    Ok(RowFigures {
        statuses,
        last_final_at,
        approve_to_final: percentiles(sql, &approve_to_final, ops, since).await?,
        approve_to_final_warm: if with_bells {
            None
        } else {
            let warm = format!(
                "{ops} AND o.decided_at >= (SELECT min(f.decided_at) FROM operations f \
                 WHERE f.tenant_id = $1 AND f.created_at >= $2) + make_interval(secs => {})",
                WARM_UP.as_secs_f64()
            );
            Some(percentiles(sql, &approve_to_final, &warm, since).await?)
        },
        claim_to_final: percentiles(
            sql,
            &ms(&format!("o.resolved_at - {first_claim}")),
            ops,
            since,
        )
        .await?,
        ring_to_final: if with_bells {
            Some(percentiles(sql, &ms("o.resolved_at - b.rung_at"), "FROM operations o JOIN bench_bells b USING (operation_id) WHERE o.tenant_id = $1 AND o.created_at >= $2", since).await?)
        } else {
            None
        },
        prepared_to_approved: percentiles(sql, &ms("o.decided_at - o.created_at"), ops, since)
            .await?,
        finals_per_second,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_label_says_how_long_the_warm_up_is() {
        assert_eq!(
            after_warm_up!(),
            format!("after the first {} s", WARM_UP.as_secs())
        );
    }
}
