//! Schema migrations, owned by sqlx's embedded migrator over `migrations/`.

use sqlx::migrate::MigrateDatabase;
use sqlx::postgres::PgPoolOptions;

use crate::StoreError;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Migrate(e.to_string())
}

/// Creates the database named in `database_url` when it does not exist yet.
pub async fn create_database_if_missing(database_url: &str) -> Result<(), StoreError> {
    if !sqlx::Postgres::database_exists(database_url).await.map_err(err)? {
        sqlx::Postgres::create_database(database_url).await.map_err(err)?;
    }
    Ok(())
}

/// Drops a database (tests clean up after themselves with it).
pub async fn drop_database(database_url: &str) -> Result<(), StoreError> {
    sqlx::Postgres::force_drop_database(database_url).await.map_err(err)
}

/// Applies every pending migration. Safe to run concurrently from several processes:
/// sqlx takes an advisory lock.
pub async fn migrate(database_url: &str) -> Result<(), StoreError> {
    let pool = PgPoolOptions::new().max_connections(1).connect(database_url).await.map_err(err)?;
    let result = MIGRATOR.run(&pool).await.map_err(err);
    pool.close().await;
    result
}
