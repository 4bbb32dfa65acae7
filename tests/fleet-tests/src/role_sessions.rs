//! Sessions as a component's own database role, for the tests that ask the database what
//! it lets each role do (the trust model's rules hold whoever connects).

use fleet_store::{role_url, DbRole};

use crate::TestFleet;

impl TestFleet {
    /// A connection to this fleet's database as `role`'s deployment login.
    pub async fn connect_as(&self, role: DbRole) -> tokio_postgres::Client {
        let url = role_url(
            &self.database_url,
            role,
            role.password_from_env().as_deref(),
        )
        .unwrap();
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("{} logs in: {e}", role.name()));
        tokio::spawn(connection);
        client
    }
}

/// What the database answered a statement: `("ok", None)`, or its SQLSTATE and the
/// constraint it names.
pub fn answer_of(result: Result<u64, tokio_postgres::Error>) -> (String, Option<String>) {
    match result {
        Ok(_) => ("ok".to_owned(), None),
        Err(e) => match e.as_db_error() {
            Some(db) => (
                db.code().code().to_owned(),
                db.constraint().map(str::to_owned),
            ),
            None => (e.to_string(), None),
        },
    }
}
