//! Where a retention job's last batch ended, so that its next batch starts there.
//!
//! A deleted row's index entry stays until a vacuum removes it, and the fleet runs none
//! (the server may run no autovacuum either). A batch that looks for the oldest rows from
//! the start of the index walks past every entry deleted before it: within one run the
//! hundredth batch walked ninety-nine batches' dead entries, and a relay that had pruned
//! for a year would walk millions of them every minute. A batch that starts at the age
//! where the last one ended reads about what it deletes, however much went before.
//!
//! A row the cursor passed can still be there for two reasons, and neither is lost for
//! good. It was held by another pruner at the time (`SKIP LOCKED`): that pruner deletes
//! it, or, if its batch failed, retries from its own cursor, which that batch did not
//! move. Or its age (`now()` in the transaction that published or received it, which is
//! when that transaction began) was below the cursor by the time it committed: only for a
//! transaction longer than the retention. A job that starts from the beginning deletes
//! it: `fleetctl prune`, the next start of the worker, and the relay once an hour.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::StoreError;

/// The age the next batch starts from; none before a job's first batch.
#[derive(Debug, Default)]
pub struct PruneCursor(Mutex<Option<DateTime<Utc>>>);

impl PruneCursor {
    pub fn new() -> PruneCursor {
        PruneCursor::default()
    }

    /// Where the next batch starts: the age of the newest row the last batch deleted
    /// (rows of that same age may remain, so it is included).
    pub fn from(&self) -> Option<DateTime<Utc>> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After a batch that deleted rows up to `newest`: the cursor only moves forward.
    pub(crate) fn advance(&self, newest: Option<DateTime<Utc>>) {
        let mut from = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if newest > *from {
            *from = newest;
        }
    }
}

/// Runs one retention batch: `sql` takes the retention in seconds (`$1`), the batch size
/// (`$2`) and where the cursor stands (`$3`, NULL before the first batch), and answers
/// how many rows it deleted (`deleted`) and the age of the newest (`newest`). Moves the
/// cursor there; returns how many went.
pub(crate) async fn prune_batch(
    client: &deadpool_postgres::Object,
    sql: &str,
    older_than_s: u64,
    batch: i64,
    cursor: &PruneCursor,
) -> Result<u64, StoreError> {
    let stmt = client.prepare_cached(sql).await?;
    // Seconds as a double: exact for any retention up to hundreds of millions of years.
    let secs = older_than_s as f64;
    let row = client
        .query_one(&stmt, &[&secs, &batch, &cursor.from()])
        .await?;
    cursor.advance(row.get("newest"));
    Ok(row.get::<_, i64>("deleted").unsigned_abs())
}
