//! The bench's own connections, for its own SQL (seeding, polls, readings of the rows and
//! of Postgres' statistics). The fleet's store only ever runs the fleet's statements, so
//! the bench opens these itself.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
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
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(Duration::from_secs(5)))
            .build()?;
        Ok(BenchSql { pool })
    }

    /// A connection of the pool, returned to it when dropped.
    pub async fn client(&self) -> anyhow::Result<Object> {
        Ok(self.pool.get().await?)
    }
}
