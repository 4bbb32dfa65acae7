//! Store errors. Every one of them is transient from a worker's point of view (the row
//! is unchanged or the transaction rolled back), so workers map them to "retry later".

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("postgres: {0}")]
    Db(#[from] tokio_postgres::Error),
    #[error("postgres pool: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("migration: {0}")]
    Migrate(String),
    #[error("configuration: {0}")]
    Config(String),
}
