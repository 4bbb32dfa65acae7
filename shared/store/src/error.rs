//! Store errors. Every one of them is transient from a worker's point of view (the row
//! is unchanged or the transaction rolled back), so workers map them to "retry later".

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("postgres: {}", describe(.0))]
    Db(#[from] tokio_postgres::Error),
    #[error("postgres pool: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("migration: {0}")]
    Migrate(String),
    #[error("configuration: {0}")]
    Config(String),
}

/// The server's code and message (never its DETAIL, which can quote row values); the
/// client error's own text otherwise ("db error" alone tells an operator nothing).
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}
