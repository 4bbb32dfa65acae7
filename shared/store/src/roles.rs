//! The database role each component connects as.
//!
//! Two layers. The migrations create one *group* role per component (`fleet_api`,
//! `fleet_execute`, …: no login) and grant it, in each database, only what that component
//! does (`migrations/0015_component_roles.sql` and later). Roles belong to the whole
//! Postgres cluster, so those groups are shared by every deployment on it; what a
//! component logs in as is a *deployment* role, `<prefix>__<component>` (for example
//! `fleet_prod__execute`), a member of its group that may connect to its own deployment's
//! database only: `fleet_store::migrate` creates them, revokes `CONNECT` from `PUBLIC` and
//! grants it to them alone. So the API role of one deployment cannot log in to another's
//! database, and each deployment has its own passwords.
//!
//! The prefix is `FLEET_DB_ROLE_PREFIX`, or else the database's name. Whoever starts the
//! fleet (the demo, the benchmark, compose, the tests) derives each component's database
//! URL from the operator's with [`role_url`].

use crate::postgres_url::PostgresUrl;
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

    /// The name of the component's group role in Postgres, which holds its grants.
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

    /// The component's part of a deployment role's name.
    pub fn component(self) -> &'static str {
        self.name().trim_start_matches("fleet_")
    }

    /// The role this component logs in as in the deployment whose roles carry `prefix`.
    pub fn login_name(self, prefix: &RolePrefix) -> String {
        format!("{}__{}", prefix.0, self.component())
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

/// The setting that names a deployment's roles.
pub const ROLE_PREFIX_SETTING: &str = "FLEET_DB_ROLE_PREFIX";

/// The longest prefix: a role name has at most 63 bytes, and the longest component part
/// is `__webhook_ingest`.
const PREFIX_MAX: usize = 47;

/// The first part of a deployment's role names: lowercase letters, digits and `_`,
/// starting with a letter or `_`, at most 47 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolePrefix(String);

impl RolePrefix {
    /// `prefix` as given, if it is one.
    pub fn parse(prefix: &str) -> Result<RolePrefix, StoreError> {
        let ok = !prefix.is_empty()
            && prefix.len() <= PREFIX_MAX
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !prefix.as_bytes()[0].is_ascii_digit();
        if ok {
            Ok(RolePrefix(prefix.to_owned()))
        } else {
            Err(StoreError::Config(format!(
                "{ROLE_PREFIX_SETTING} must be 1 to {PREFIX_MAX} lowercase letters, digits and _, not starting with a digit"
            )))
        }
    }

    /// The prefix of the deployment whose database `database_url` names:
    /// `FLEET_DB_ROLE_PREFIX` if set, else the database's name made into one (lowercase,
    /// anything else than a letter, digit or `_` written `_`).
    pub fn of(database_url: &str) -> Result<RolePrefix, StoreError> {
        if let Some(p) = std::env::var(ROLE_PREFIX_SETTING)
            .ok()
            .filter(|p| !p.is_empty())
        {
            return RolePrefix::parse(&p);
        }
        let name = database_name(database_url)?;
        let mut p: String = name
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9' | '_') => c,
                _ => '_',
            })
            .collect();
        if p.starts_with(|c: char| c.is_ascii_digit()) {
            p.insert(0, '_');
        }
        RolePrefix::parse(&p).map_err(|_| {
            StoreError::Config(format!(
                "the database name {name:?} makes no role prefix of at most {PREFIX_MAX} characters: set {ROLE_PREFIX_SETTING}"
            ))
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The database a `postgres://` URL names (one server or a list of them).
fn database_name(database_url: &str) -> Result<String, StoreError> {
    let url = PostgresUrl::parse(database_url)?;
    // As written in the URL: a percent-escape only becomes `_` in a prefix.
    url.database()
        .map(str::to_owned)
        .ok_or_else(|| StoreError::Config("DATABASE_URL names no database".into()))
}

impl crate::Store {
    /// Whether this database's deployment roles exist and are granted their rights: a
    /// database migrated by an older revision has none, and the benchmark then runs that
    /// revision's workers as the owner, as it ran them.
    pub async fn grants_component_roles(&self, prefix: &RolePrefix) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let login = DbRole::Execute.login_name(prefix);
        let row = client
            .query_one(
                "SELECT CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = $1)
                        THEN has_column_privilege($1, 'operations', 'status', 'UPDATE')
                        ELSE false END",
                &[&login],
            )
            .await?;
        Ok(row.get(0))
    }
}

/// `database_url` with the deployment's login role of `role` as its user and `password`
/// (or none) as its password: the same server, database and options, another identity.
pub fn role_url(
    database_url: &str,
    role: DbRole,
    password: Option<&str>,
) -> Result<String, StoreError> {
    let prefix = RolePrefix::of(database_url)?;
    // A list of servers (a primary and its standby) stays a list: each component must
    // find the writable one after a failover as the operator's URL would.
    let url =
        PostgresUrl::parse(database_url)?.with_credentials(&role.login_name(&prefix), password)?;
    Ok(url.as_string())
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
            "postgres://fleet__execute@db.internal:5433/fleet?sslmode=require"
        );
        let url = role_url(
            "postgresql://postgres@127.0.0.1:5432/fleet_t_1",
            DbRole::WebhookIngest,
            Some("p@ss/word"),
        )
        .unwrap();
        assert_eq!(
            url,
            "postgresql://fleet_t_1__webhook_ingest:p%40ss%2Fword@127.0.0.1:5432/fleet_t_1"
        );
    }

    #[test]
    fn a_role_url_keeps_every_server_of_a_list() {
        let url = role_url(
            "postgres://postgres@127.0.0.1:5433,127.0.0.1:5434/fleet_t_1?target_session_attrs=read-write",
            DbRole::Relay,
            Some("pw"),
        )
        .unwrap();
        assert_eq!(
            url,
            "postgres://fleet_t_1__relay:pw@127.0.0.1:5433,127.0.0.1:5434/fleet_t_1?target_session_attrs=read-write"
        );
        assert_eq!(
            RolePrefix::of("postgres://u@db1:5432,db2:5432/Fleet-Prod?sslmode=require")
                .unwrap()
                .as_str(),
            "fleet_prod"
        );
    }

    #[test]
    fn only_postgres_urls_with_a_host_are_rewritten() {
        for bad in [
            "mysql://root@localhost/db",
            "not a url",
            "postgres:///fleet",
            "postgres://h1,/fleet",
            "postgres://h1:x,h2/fleet",
        ] {
            assert!(role_url(bad, DbRole::Api, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_prefix_comes_from_the_database_name_and_stays_a_valid_role_name() {
        let of = |url: &str| RolePrefix::of(url).map(|p| p.as_str().to_owned());
        assert_eq!(of("postgres://h/fleet").unwrap(), "fleet");
        assert_eq!(of("postgres://h/Fleet-Prod.eu").unwrap(), "fleet_prod_eu");
        assert_eq!(of("postgres://h/2024db").unwrap(), "_2024db");
        assert!(of("postgres://h/").is_err());
        assert!(of(&format!("postgres://h/{}", "d".repeat(48))).is_err());
        let longest = RolePrefix::parse(&"p".repeat(PREFIX_MAX)).unwrap();
        for role in DbRole::ALL {
            assert!(role.login_name(&longest).len() <= 63, "{role:?}");
        }
        for bad in ["", "Upper", "9lives", "semi;colon", "quote\"", "space d"] {
            assert!(RolePrefix::parse(bad).is_err(), "{bad}");
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
