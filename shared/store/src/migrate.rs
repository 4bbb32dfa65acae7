//! Schema migrations, owned by sqlx's embedded migrator over `migrations/`.
//!
//! sqlx connects to one server only, while a deployment with a standby names both in its
//! URL (`postgres://…@db1,db2/fleet?target_session_attrs=read-write`): every function
//! here first picks the server of the list that accepts writes
//! ([`writable_server`](crate::postgres_url::writable_server)), so `fleetctl migrate` takes
//! the same URL as the workers, before and after a failover.

use sqlx::migrate::MigrateDatabase;
use sqlx::postgres::PgPoolOptions;

use crate::postgres_url::{writable_server, PostgresUrl};
use crate::{DbRole, RolePrefix, StoreError};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Migrate(e.to_string())
}

/// Creates the database named in `database_url` when it does not exist yet.
pub async fn create_database_if_missing(database_url: &str) -> Result<(), StoreError> {
    let database_url = &writable_server(database_url).await?;
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

/// Drops a database and its deployment's roles (tests clean up after themselves with it).
pub async fn drop_database(database_url: &str) -> Result<(), StoreError> {
    let database_url = &writable_server(database_url).await?;
    sqlx::Postgres::force_drop_database(database_url)
        .await
        .map_err(err)?;
    drop_deployment_roles(database_url).await
}

/// Drops the deployment roles of the (dropped) database `database_url` names. They own
/// nothing and hold grants in that database only, so nothing else refers to them.
async fn drop_deployment_roles(database_url: &str) -> Result<(), StoreError> {
    let prefix = RolePrefix::of(database_url)?;
    let maintenance = PostgresUrl::parse(database_url)?.with_database("postgres");
    let pool = one_connection(&maintenance.as_string()).await?;
    let mut result = Ok(());
    for role in DbRole::ALL {
        let statement = format!(
            "DROP ROLE IF EXISTS {}",
            quote_ident(&role.login_name(&prefix))
        );
        if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&pool)
            .await
        {
            result = Err(err(e));
        }
    }
    pool.close().await;
    result
}

/// Applies every pending migration, then makes sure the deployment's login roles exist
/// (see `roles.rs`). Safe to run concurrently from several processes: sqlx takes an
/// advisory lock, and the roles are the deployment's own.
pub async fn migrate(database_url: &str) -> Result<(), StoreError> {
    let prefix = RolePrefix::of(database_url)?;
    let database_url = &writable_server(database_url).await?;
    let pool = one_connection(database_url).await?;
    let mut result = MIGRATOR.run(&pool).await.map_err(err);
    if result.is_ok() {
        result = ensure_deployment_roles(&pool, &prefix).await;
    }
    pool.close().await;
    result
}

/// Creates the deployment's login role of each component if missing, a member of the
/// component's group role (which holds its grants) and nothing else; lets those roles,
/// and only them and the owner, connect to this database.
async fn ensure_deployment_roles(
    pool: &sqlx::PgPool,
    prefix: &RolePrefix,
) -> Result<(), StoreError> {
    let (database,): (String,) = sqlx::query_as("SELECT current_database()")
        .fetch_one(pool)
        .await
        .map_err(err)?;
    let database = quote_ident(&database);
    let mut statements = vec![format!(
        "REVOKE CONNECT, TEMPORARY ON DATABASE {database} FROM PUBLIC"
    )];
    for role in DbRole::ALL {
        let login = role.login_name(prefix);
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1)")
                .bind(&login)
                .fetch_one(pool)
                .await
                .map_err(err)?;
        let login = quote_ident(&login);
        if !exists {
            statements.push(format!(
                "CREATE ROLE {login} LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
            ));
        }
        statements.push(format!("GRANT {} TO {login}", role.name()));
        statements.push(format!("GRANT CONNECT ON DATABASE {database} TO {login}"));
    }
    for statement in statements {
        // Names are ours, quoted; nothing here comes from a request.
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(pool)
            .await
            .map_err(err)?;
    }
    Ok(())
}

/// A pool of one connection: migrations and role statements run one at a time.
async fn one_connection(url: &str) -> Result<sqlx::PgPool, StoreError> {
    PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .map_err(err)
}

/// `name` as a quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Sets the password of each of the deployment's component roles given (`fleetctl
/// migrate` passes those found in the environment). Each deployment's roles are its own,
/// so this changes no other database's.
pub async fn set_role_passwords(
    database_url: &str,
    passwords: &[(crate::DbRole, String)],
) -> Result<(), StoreError> {
    if passwords.is_empty() {
        return Ok(());
    }
    let prefix = RolePrefix::of(database_url)?;
    let database_url = &writable_server(database_url).await?;
    let pool = one_connection(database_url).await?;
    for (role, password) in passwords {
        // ALTER ROLE takes no parameters: the password is written as a quoted literal.
        let literal = format!("'{}'", password.replace('\'', "''"));
        let statement = format!(
            "ALTER ROLE {} PASSWORD {literal}",
            quote_ident(&role.login_name(&prefix))
        );
        // The role name is one of ours; the password is quoted above.
        if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&pool)
            .await
        {
            pool.close().await;
            // Never the statement itself: it holds the password.
            return Err(StoreError::Migrate(format!(
                "setting the password of {}: {}",
                role.login_name(&prefix),
                e.as_database_error()
                    .map_or("no answer".into(), |d| d.message().to_owned())
            )));
        }
    }
    pool.close().await;
    Ok(())
}
