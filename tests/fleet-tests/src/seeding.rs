//! History written in bulk by a test, past the rules that guard rows one by one.

/// Runs `statement` (history seeded in bulk) with the tables' triggers off, which refuse a
/// row inserted settled or without its history, then turns them on again; the rows it
/// wrote.
pub async fn seeded_with_triggers_off(
    sql: &tokio_postgres::Client,
    statement: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> u64 {
    sql.batch_execute("SET session_replication_role = replica")
        .await
        .unwrap();
    let seeded = sql.execute(statement, params).await;
    sql.batch_execute("SET session_replication_role = origin")
        .await
        .unwrap();
    seeded.unwrap()
}
