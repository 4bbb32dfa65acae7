//! Reads of what waits in a state, by index scans only.
//!
//! A row that leaves a state (a pending approval, `in_progress`) leaves its old entry in
//! that state's partial index until a vacuum removes it, and the fleet runs none (the
//! server may run no autovacuum either). A bitmap scan visits every such entry, and its
//! heap page, on every read and marks none; an index scan marks each dead entry the first
//! time it meets it, so later reads skip it. Read by bitmap, a count of what waits (or a
//! list of it) would read an entry for every operation that ever passed through the state
//! since the last vacuum (every operation passes through pending and in progress); read by
//! index, each entry is read once.

use tokio_postgres::Row;

use crate::component::Component;
use crate::many_rows::Param;
use crate::{StoreAs, StoreError};

impl<R: Component> StoreAs<R> {
    /// Runs `sql` with bitmap scans off, in a transaction of its own. The plan the session
    /// caches for `sql` is made inside this setting, and so is any plan made again later.
    pub(crate) async fn by_index_scans(
        &self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.batch_execute("SET LOCAL enable_bitmapscan = off")
            .await?;
        let stmt = tx.prepare_cached(sql).await?;
        let rows = tx.query(&stmt, params).await?;
        tx.commit().await?;
        Ok(rows)
    }
}
