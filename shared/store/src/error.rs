//! Store errors. Almost every one is transient from a worker's point of view (the row is
//! unchanged or the transaction rolled back), so workers map them to "retry later". The
//! exception is Postgres refusing the values themselves ([`StoreError::refuses_content`]):
//! the same message would be refused on every retry.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("postgres: {}", describe(.0))]
    Db(#[from] tokio_postgres::Error),
    #[error("postgres pool: {}", describe_pool(.0))]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("migration: {0}")]
    Migrate(String),
    #[error("configuration: {0}")]
    Config(String),
    /// The statement or commit of a batch this request was part of failed (the error is
    /// the batch's, told to each of its requests).
    #[error("batch: {0}")]
    Batched(String),
    /// A stored value this build cannot read (a reason no variant names): the row is
    /// never guessed at; the caller fails as it would on a database error.
    #[error("unreadable row: {0}")]
    Unreadable(String),
}

impl StoreError {
    /// The SQLSTATE of an error the server reported, e.g. `22021`.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            StoreError::Db(e) => e.as_db_error().map(|db| db.code().code()),
            // A connection the server refused to open (no such database or role).
            StoreError::Pool(deadpool_postgres::PoolError::Backend(e)) => {
                e.as_db_error().map(|db| db.code().code())
            }
            StoreError::Pool(_)
            | StoreError::Migrate(_)
            | StoreError::Config(_)
            | StoreError::Batched(_)
            | StoreError::Unreadable(_) => None,
        }
    }

    /// Whether Postgres refused the statement because of the values it carried: a data
    /// exception (SQLSTATE class 22, e.g. U+0000 in text, a number out of a column's
    /// range) or an integrity constraint (class 23). Retrying sends the same values, so
    /// the message is refused for good instead of retried as if the database were down.
    pub fn refuses_content(&self) -> bool {
        self.sqlstate().is_some_and(refuses_content)
    }

    /// Whether the server says the deployment is not set up: its database, a component's
    /// role or the tables do not exist. Waiting does not mend it; `fleetctl migrate` does.
    pub fn is_not_set_up(&self) -> bool {
        self.sqlstate()
            .is_some_and(|code| !migrate_hint(code).is_empty())
    }
}

/// See [`StoreError::refuses_content`]. Connection failures, lock timeouts, deadlocks,
/// serialisation failures and shutdowns (classes 08, 40, 53, 55, 57, …) stay transient.
pub(crate) fn refuses_content(sqlstate: &str) -> bool {
    sqlstate.starts_with("22") || sqlstate.starts_with("23")
}

/// The server's code and message (never its DETAIL, which can quote row values); the
/// client error's own text otherwise ("db error" alone tells an operator nothing). A
/// database that is missing, or has no fleet tables yet, says what to run.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            format!("{} ({code}){}", db.message(), migrate_hint(code))
        }
        None => e.to_string(),
    }
}

/// A connection that could not be opened carries the server's refusal inside.
fn describe_pool(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(db) => describe(db),
        other => other.to_string(),
    }
}

/// What an operator should do when the server says the database (3D000), a component's
/// login role (28000) or a table (42P01) does not exist: the schema and the roles come
/// only from the migrations.
fn migrate_hint(sqlstate: &str) -> &'static str {
    match sqlstate {
        "3D000" | "28000" | "42P01" => "; the database, its roles or its tables do not exist yet: run `fleetctl migrate` (it creates them)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_exceptions_and_constraint_violations_refuse_the_content() {
        for code in [
            "22021", "22P05", "22003", "22001", "23505", "23514", "23000", "23503",
        ] {
            assert!(refuses_content(code), "{code}");
        }
    }

    #[test]
    fn unavailability_and_concurrency_failures_are_transient() {
        for code in [
            "08006", "08001", "40001", "40P01", "53300", "55P03", "57P01", "57014", "XX000",
            "42P01",
        ] {
            assert!(!refuses_content(code), "{code}");
        }
    }

    #[test]
    fn a_missing_database_or_table_says_to_migrate() {
        assert!(migrate_hint("3D000").contains("fleetctl migrate"));
        assert!(migrate_hint("42P01").contains("fleetctl migrate"));
        assert!(migrate_hint("28000").contains("fleetctl migrate"));
        assert_eq!(migrate_hint("23505"), "");
        assert_eq!(migrate_hint("08006"), "");
    }

    #[test]
    fn errors_without_a_server_code_are_transient() {
        assert!(!StoreError::Config("x".into()).refuses_content());
        assert_eq!(StoreError::Migrate("x".into()).sqlstate(), None);
    }
}
