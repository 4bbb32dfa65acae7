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
use crate::role_owner::{marker, owner_of, Owner};
use crate::roles::database_name;
use crate::{DbRole, RolePrefix, StoreError, ROLE_PREFIX_SETTING};

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

/// Drops the deployment roles of the (dropped) database `database_url` names, those that
/// belong to it only (`role_owner.rs`): a role of another deployment that happens to carry
/// the same name is left alone. They own nothing and hold grants in that database only, so
/// nothing else refers to them.
async fn drop_deployment_roles(database_url: &str) -> Result<(), StoreError> {
    let prefix = RolePrefix::of(database_url)?;
    let database = database_name(database_url)?;
    let maintenance = PostgresUrl::parse(database_url)?.with_database("postgres");
    let pool = one_connection(&maintenance.as_string()).await?;
    let result = async {
        let mut conn = pool.acquire().await.map_err(err)?;
        let mut result = Ok(());
        for role in DbRole::ALL {
            let login = role.login_name(&prefix);
            if !matches!(
                owner_of(&mut conn, &login, &database).await?,
                Owner::Ours { .. }
            ) {
                continue;
            }
            let statement = format!("DROP ROLE IF EXISTS {}", quote_ident(&login));
            if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(statement))
                .execute(&mut *conn)
                .await
            {
                result = Err(err(e));
            }
        }
        result
    }
    .await;
    pool.close().await;
    result
}

/// Applies every pending migration, records the catalogue's providers, loads the
/// deployment's policies, then makes sure the
/// deployment's login roles exist (see `roles.rs`). Safe to run concurrently from several
/// processes: sqlx takes an advisory lock, and so does the making of the roles.
///
/// The roles come last: a worker waiting for its database to be set up can log in only
/// once the tables and the policies its intake judges by are there, so the first intents
/// it takes are never refused for want of a policy.
pub async fn migrate(database_url: &str) -> Result<(), StoreError> {
    let prefix = RolePrefix::of(database_url)?;
    let database_url = &writable_server(database_url).await?;
    let pool = one_connection(database_url).await?;
    let mut result = MIGRATOR.run(&pool).await.map_err(err);
    if result.is_ok() {
        result = record_providers(&pool).await;
    }
    if result.is_ok() {
        result = load_deployment_policies(database_url).await;
    }
    if result.is_ok() {
        result = ensure_deployment_roles(&pool, &prefix).await;
    }
    pool.close().await;
    result
}

/// Makes the database's `providers` table name exactly the catalogue's providers
/// (`fleet_core::catalogue::provider_spec::PROVIDERS`), the ones an operation may name
/// (`operations_provider_fkey`, 0084_providers_table.sql): a provider added to the
/// catalogue is known to the database from this migrate on, with no migration of its own.
/// A name the catalogue no longer has is removed unless an operation names it (the
/// reference keeps it: that row stays readable as written).
async fn record_providers(pool: &sqlx::PgPool) -> Result<(), StoreError> {
    let names: Vec<&str> = fleet_core::ProviderName::all()
        .map(fleet_core::ProviderName::as_str)
        .collect();
    sqlx::query(
        "WITH added AS (
             INSERT INTO providers (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING
         )
         DELETE FROM providers p
          WHERE p.name <> ALL($1::text[])
            AND NOT EXISTS (SELECT FROM operations o WHERE o.provider = p.name)",
    )
    .bind(&names)
    .execute(pool)
    .await
    .map_err(err)?;
    Ok(())
}

/// Loads the policy files the deployment's binaries judge by (`POLICY_DIR`, else the ones
/// built in) into the database, where the insert of every operation is checked against
/// them, and seeds the default policy in force for each action (`crate::policies`).
async fn load_deployment_policies(database_url: &str) -> Result<(), StoreError> {
    let args = fleet_runtime::PolicyArgs {
        policy_dir: std::env::var_os("POLICY_DIR")
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from),
    };
    let set = args.load().map_err(|e| StoreError::Config(e.to_string()))?;
    let store = crate::Store::connect(database_url, 1)?;
    let loaded = store.load_policies(&set, "fleetctl migrate").await?;
    if !loaded.undecided.is_empty() {
        tracing::warn!(actions = ?loaded.undecided, "several policies name these actions and none is in force: intents for them are refused until `fleetctl policy assign` chooses one");
    }
    Ok(())
}

/// Creates the deployment's login role of each component if missing, a member of the
/// component's group role (which holds its grants) and nothing else, marked as this
/// database's; lets those roles, and only them and the owner, connect to this database.
///
/// A role of that name that belongs to another database (`role_owner.rs`) is refused
/// before anything is changed: granting it this database, or its group, would let one
/// deployment's component into another's.
async fn ensure_deployment_roles(
    pool: &sqlx::PgPool,
    prefix: &RolePrefix,
) -> Result<(), StoreError> {
    let mut tx = pool.begin().await.map_err(err)?;
    // Two migrations of this database at once would both create the missing roles.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('fleet deployment roles'))")
        .execute(&mut *tx)
        .await
        .map_err(err)?;
    let (database,): (String,) = sqlx::query_as("SELECT current_database()")
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
    let quoted = quote_ident(&database);
    let mut statements = vec![format!(
        "REVOKE CONNECT, TEMPORARY ON DATABASE {quoted} FROM PUBLIC"
    )];
    for role in DbRole::ALL {
        let login = role.login_name(prefix);
        let owner = owner_of(&mut tx, &login, &database).await?;
        if let Some(refusal) = owner.refusal(&login, &database) {
            return Err(StoreError::Migrate(format!(
                "{refusal}; nothing was changed. Give this deployment its own roles with {ROLE_PREFIX_SETTING}, \
                 or, if the role is this deployment's, revoke its CONNECT on the other database"
            )));
        }
        let q = quote_ident(&login);
        if owner == Owner::Missing {
            statements.push(format!(
                "CREATE ROLE {q} LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
            ));
        }
        if owner != (Owner::Ours { marked: true }) {
            statements.push(format!(
                "COMMENT ON ROLE {q} IS {}",
                quote_literal(&marker(&database))
            ));
        }
        statements.push(format!("GRANT {} TO {q}", role.name()));
        statements.push(format!("GRANT CONNECT ON DATABASE {quoted} TO {q}"));
    }
    for statement in statements {
        // Names are ours, quoted; nothing here comes from a request.
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *tx)
            .await
            .map_err(err)?;
    }
    tx.commit().await.map_err(err)
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

/// `text` as a quoted SQL string literal (the server reads standard-conforming strings).
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Sets the password of each of the deployment's component roles given (`fleetctl
/// migrate` passes those found in the environment, after migrating). Each role must be
/// marked as this database's (`role_owner.rs`): no other deployment's password is ever
/// changed, and none is changed unless all are this one's.
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
    if let Err(e) = passwords_are_ours(&pool, &prefix, passwords).await {
        pool.close().await;
        return Err(e);
    }
    for (role, password) in passwords {
        // ALTER ROLE takes no parameters: the password is written as a quoted literal.
        let literal = quote_literal(password);
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

/// Whether every role `passwords` names is this database's, marked so by a migration.
async fn passwords_are_ours(
    pool: &sqlx::PgPool,
    prefix: &RolePrefix,
    passwords: &[(DbRole, String)],
) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await.map_err(err)?;
    let (database,): (String,) = sqlx::query_as("SELECT current_database()")
        .fetch_one(&mut *conn)
        .await
        .map_err(err)?;
    for (role, _) in passwords {
        let login = role.login_name(prefix);
        let owner = owner_of(&mut conn, &login, &database).await?;
        if let Some(refusal) = owner.refusal(&login, &database) {
            return Err(StoreError::Migrate(format!(
                "{refusal}: its password is not this deployment's to set; no password was changed"
            )));
        }
        if owner != (Owner::Ours { marked: true }) {
            return Err(StoreError::Migrate(format!(
                "the database role {login} is not yet this deployment's: run `fleetctl migrate` first; no password was changed"
            )));
        }
    }
    Ok(())
}
