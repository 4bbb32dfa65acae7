//! The database role each component connects as. The migrations create one login role per
//! component and grant it only what that component does (`migrations/0015_component_roles.sql`);
//! whoever starts the fleet (the demo, the benchmark, compose, the tests) derives each
//! component's database URL from the operator's with [`role_url`].

use crate::StoreError;

/// A component that connects to Postgres at run time, and so has its own role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DbRole {
    Api,
    Prepare,
    Execute,
    Reconcile,
    WebhookIngest,
    Relay,
}

impl DbRole {
    pub const ALL: [DbRole; 6] = [
        DbRole::Api,
        DbRole::Prepare,
        DbRole::Execute,
        DbRole::Reconcile,
        DbRole::WebhookIngest,
        DbRole::Relay,
    ];

    /// The role's name in Postgres.
    pub fn name(self) -> &'static str {
        match self {
            DbRole::Api => "fleet_api",
            DbRole::Prepare => "fleet_prepare",
            DbRole::Execute => "fleet_execute",
            DbRole::Reconcile => "fleet_reconcile",
            DbRole::WebhookIngest => "fleet_webhook_ingest",
            DbRole::Relay => "fleet_relay",
        }
    }

    /// The component's binary.
    pub fn binary(self) -> &'static str {
        match self {
            DbRole::Api => "fleet-api",
            DbRole::Prepare => "fleet-prepare",
            DbRole::Execute => "fleet-execute",
            DbRole::Reconcile => "fleet-reconcile",
            DbRole::WebhookIngest => "fleet-webhook-ingest",
            DbRole::Relay => "fleet-relay",
        }
    }

    /// The role of the component `binary` runs, if it connects to Postgres.
    pub fn of_binary(binary: &str) -> Option<DbRole> {
        DbRole::ALL.into_iter().find(|r| r.binary() == binary)
    }

    /// The setting that holds the role's password, for `fleetctl migrate` to set and for
    /// whoever starts the component to put in its URL (unset: no password, for servers
    /// that trust local connections).
    pub fn password_setting(self) -> &'static str {
        match self {
            DbRole::Api => "FLEET_DB_PASSWORD_API",
            DbRole::Prepare => "FLEET_DB_PASSWORD_PREPARE",
            DbRole::Execute => "FLEET_DB_PASSWORD_EXECUTE",
            DbRole::Reconcile => "FLEET_DB_PASSWORD_RECONCILE",
            DbRole::WebhookIngest => "FLEET_DB_PASSWORD_WEBHOOK_INGEST",
            DbRole::Relay => "FLEET_DB_PASSWORD_RELAY",
        }
    }

    /// The password given in the environment, if any.
    pub fn password_from_env(self) -> Option<String> {
        std::env::var(self.password_setting())
            .ok()
            .filter(|p| !p.is_empty())
    }
}

impl crate::Store {
    /// Whether this database grants the component roles their rights (its migrations
    /// include the roles'): a database migrated by an older revision does not, and the
    /// benchmark then runs that revision's workers as the owner, as it ran them.
    pub async fn grants_component_roles(&self) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = 'fleet_execute')
                        THEN has_column_privilege('fleet_execute', 'operations', 'status', 'UPDATE')
                        ELSE false END",
                &[],
            )
            .await?;
        Ok(row.get(0))
    }
}

/// `database_url` with `role` as its user and `password` (or none) as its password: the
/// same server, database and options, another identity.
pub fn role_url(
    database_url: &str,
    role: DbRole,
    password: Option<&str>,
) -> Result<String, StoreError> {
    let invalid = || StoreError::Config("DATABASE_URL is not a postgres:// URL with a host".into());
    let mut url = url::Url::parse(database_url).map_err(|_| invalid())?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err(invalid());
    }
    url.set_username(role.name()).map_err(|_| invalid())?;
    url.set_password(password).map_err(|_| invalid())?;
    Ok(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_url_keeps_server_database_and_options() {
        let url = role_url(
            "postgres://postgres:secret@db.internal:5433/fleet?sslmode=require",
            DbRole::Execute,
            None,
        )
        .unwrap();
        assert_eq!(
            url,
            "postgres://fleet_execute@db.internal:5433/fleet?sslmode=require"
        );
        let url = role_url(
            "postgresql://postgres@127.0.0.1:5432/fleet_t_1",
            DbRole::WebhookIngest,
            Some("p@ss/word"),
        )
        .unwrap();
        assert_eq!(
            url,
            "postgresql://fleet_webhook_ingest:p%40ss%2Fword@127.0.0.1:5432/fleet_t_1"
        );
    }

    #[test]
    fn only_postgres_urls_with_a_host_are_rewritten() {
        for bad in [
            "mysql://root@localhost/db",
            "not a url",
            "postgres:///fleet",
        ] {
            assert!(role_url(bad, DbRole::Api, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_component_binary_names_its_role() {
        for role in DbRole::ALL {
            assert_eq!(DbRole::of_binary(role.binary()), Some(role));
            assert!(
                role.name().starts_with("fleet_")
                    && role.password_setting().starts_with("FLEET_DB_PASSWORD_")
            );
        }
        assert_eq!(DbRole::of_binary("fleetctl"), None);
        assert_eq!(DbRole::of_binary("fleet-provider-sim"), None);
    }
}
