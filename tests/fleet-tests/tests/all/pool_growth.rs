//! A pool opens connections one at a time while checkouts wait. A new connection pays for
//! its first statements in the server's CPU; a pool that opened one for every waiting
//! checkout opened eight at once in prepare alone (some fifteen across the fleet)
//! whenever the fleet started or a commit stalled.

use std::time::Instant;

use fleet_store::{Store, POOL_GROW_EVERY};
use fleet_tests::TestFleet;

/// The connections open under `application_name` on the fleet's database.
async fn open(sql: &tokio_postgres::Client, application_name: &str) -> i64 {
    sql.query_one(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = $1",
        &[&application_name],
    )
    .await
    .unwrap()
    .get(0)
}

#[tokio::test]
async fn a_pool_opens_one_connection_at_a_time_while_checkouts_wait_up_to_its_size() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let name = "fleet-pool-growth";
    let size = 8;
    let store = Store::connect_as(&fleet.database_url, size, name).unwrap();

    // Every checkout is held until all of them are served: each one beyond the first two
    // waits for the pool to grow, since none comes back.
    let t = Instant::now();
    let held = futures_util::future::join_all((0..size).map(|_| store.pooled_session())).await;
    let took = t.elapsed();
    let held: Vec<_> = held.into_iter().map(|c| c.unwrap()).collect();
    assert_eq!(held.len(), size, "the pool reaches its size");
    assert_eq!(open(&sql, name).await, size as i64);
    assert!(
        took >= POOL_GROW_EVERY * (size as u32 - 3),
        "the six connections beyond the first two were opened one at a time, a pacing apart \
         (took {took:?})"
    );

    // A burst of short checkouts against two warm connections: served by them, one more
    // opened per pacing step at most while the burst waits.
    drop(held);
    store.close();
    let name = "fleet-pool-burst";
    let store = Store::connect_as(&fleet.database_url, size, name).unwrap();
    let warm = futures_util::future::join_all((0..2).map(|_| store.pooled_session())).await;
    drop(warm);
    let t = Instant::now();
    let burst = futures_util::future::join_all((0..size * 4).map(|_| async {
        let client = store.pooled_session().await.unwrap();
        client.simple_query("SELECT 1").await.unwrap();
    }));
    burst.await;
    let took = t.elapsed();
    let opened = open(&sql, name).await - 2;
    let allowed = (took.as_millis() / POOL_GROW_EVERY.as_millis()) as i64 + 1;
    assert!(
        opened <= allowed,
        "{opened} connections opened for a burst of {} short checkouts in {took:?}: at most \
         one per {POOL_GROW_EVERY:?} of waiting",
        size * 4
    );
    store.close();
    fleet.stop().await;
}
