//! The bench's own connections, for its own SQL (seeding, polls, readings of the rows and
//! of Postgres' statistics). The fleet's store only ever runs the fleet's statements, so
//! the bench opens these itself.

use std::time::Duration;

use deadpool_postgres::{ConfigConnectImpl, Object, Pool};
use tokio_postgres::NoTls;

use super::database::BENCH_APP;

/// A pool on one database, its connections named [`BENCH_APP`] (so they can be told
/// apart from the fleet's) and opened lazily: a pool never used never connects.
#[derive(Clone)]
pub struct BenchSql {
    pool: Pool,
}

impl BenchSql {
    pub fn connect(url: &str, max_size: usize) -> anyhow::Result<BenchSql> {
        let mut config: tokio_postgres::Config = url.parse()?;
        config.connect_timeout(Duration::from_secs(5));
        config.application_name(BENCH_APP);
        let connect = ConfigConnectImpl { tls: NoTls };
        let pool =
            fleet_store::pool_builder(config, connect, max_size, Duration::from_secs(5)).build()?;
        Ok(BenchSql { pool })
    }

    /// A connection of the pool, returned to it when dropped.
    pub async fn client(&self) -> anyhow::Result<Object> {
        Ok(self.pool.get().await?)
    }
}
