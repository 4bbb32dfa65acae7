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
    if !sqlx::Postgres::database_exists(database_url)
        .await
        .map_err(err)?
    {
        sqlx::Postgres::create_database(database_url)
            .await
            .map_err(err)?;
    }
    Ok(())
}

/// Drops a database (tests clean up after themselves with it).
pub async fn drop_database(database_url: &str) -> Result<(), StoreError> {
    sqlx::Postgres::force_drop_database(database_url)
        .await
        .map_err(err)
}

/// Applies every pending migration. Safe to run concurrently from several processes:
/// sqlx takes an advisory lock.
pub async fn migrate(database_url: &str) -> Result<(), StoreError> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(database_url)
        .await
        .map_err(err)?;
    let result = MIGRATOR.run(&pool).await.map_err(err);
    pool.close().await;
    result
}

/// Sets the password of each component role given (`fleetctl migrate` passes those found
/// in the environment). Roles belong to the cluster: this changes them for every database
/// of the server.
pub async fn set_role_passwords(
    database_url: &str,
    passwords: &[(crate::DbRole, String)],
) -> Result<(), StoreError> {
    if passwords.is_empty() {
        return Ok(());
    }
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(database_url)
        .await
        .map_err(err)?;
    for (role, password) in passwords {
        // ALTER ROLE takes no parameters: the password is written as a quoted literal.
        let literal = format!("'{}'", password.replace('\'', "''"));
        let statement = format!("ALTER ROLE {} PASSWORD {literal}", role.name());
        // The role name is one of ours; the password is quoted above.
        if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&pool)
            .await
        {
            pool.close().await;
            // Never the statement itself: it holds the password.
            return Err(StoreError::Migrate(format!(
                "setting the password of {}: {}",
                role.name(),
                e.as_database_error()
                    .map_or("no answer".into(), |d| d.message().to_owned())
            )));
        }
    }
    pool.close().await;
    Ok(())
}
