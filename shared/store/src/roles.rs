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
//! The prefix is `FLEET_DB_ROLE_PREFIX` (an explicit deployment id), or else derived from
//! the database's exact name so that two databases never share roles ([`RolePrefix::of_database`]).
//! `fleet_store::migrate` marks each role it creates with the database it belongs to and
//! refuses a role that belongs to another (`role_owner.rs`). Whoever starts the fleet (the
//! demo, the benchmark, compose, the tests) derives each component's database URL from
//! the operator's with [`role_url`].

use sha2::{Digest, Sha256};

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

/// How many hex digits of the SHA-256 of the exact database name a derived prefix ends
/// with: 48 bits, so that finding another name with the same prefix is out of reach by
/// trial (and `fleetctl migrate` refuses roles of another database anyway).
const HASH_HEX: usize = 12;

/// The first part of a deployment's role names: lowercase letters, digits and `_`,
/// starting with a letter or `_`, at most 47 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// `FLEET_DB_ROLE_PREFIX` if set, else [`RolePrefix::of_database`] of the database's
    /// name (its %-escapes decoded, as the server knows it).
    pub fn of(database_url: &str) -> Result<RolePrefix, StoreError> {
        if let Some(p) = std::env::var(ROLE_PREFIX_SETTING)
            .ok()
            .filter(|p| !p.is_empty())
        {
            return RolePrefix::parse(&p);
        }
        Ok(RolePrefix::of_database(&database_name(database_url)?))
    }

    /// The prefix of database `name`, one to one: two databases never get the same one.
    ///
    /// A *plain* name (a lowercase letter, then lowercase letters, digits and `_`, at most
    /// 47 characters) is its own prefix, so `fleet` and `fleet_prod` keep the role names
    /// they always had. Any other name is written `_<sanitised>_<hash>`: `_`, the name
    /// lowercased with every other character `_` and cut to fit, `_`, and the first 12 hex
    /// digits of the SHA-256 of the exact name. Such a prefix starts with `_`, which no
    /// plain name does, so the two kinds never meet; and two other names that read alike
    /// once sanitised (`fleet-x-y`, `Fleet.x.y`) differ by their hashes.
    pub fn of_database(name: &str) -> RolePrefix {
        let plain = name.len() <= PREFIX_MAX
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if plain {
            return RolePrefix(name.to_owned());
        }
        let room = PREFIX_MAX - 2 - HASH_HEX;
        let sanitised: String = name
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9' | '_') => c,
                _ => '_',
            })
            .take(room)
            .collect();
        let digest = Sha256::digest(name.as_bytes());
        let hash: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        RolePrefix(format!("_{sanitised}_{}", &hash[..HASH_HEX]))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The database a `postgres://` URL names (one server or a list of them), as the server
/// knows it.
pub(crate) fn database_name(database_url: &str) -> Result<String, StoreError> {
    PostgresUrl::parse(database_url)?
        .database_name()?
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
            RolePrefix::of("postgres://u@db1:5432,db2:5432/fleet_prod?sslmode=require")
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
    fn a_plain_database_name_is_its_own_prefix() {
        let of = |url: &str| RolePrefix::of(url).map(|p| p.as_str().to_owned());
        assert_eq!(of("postgres://h/fleet").unwrap(), "fleet");
        assert_eq!(of("postgres://h/fleet_x_y").unwrap(), "fleet_x_y");
        let longest = "p".repeat(PREFIX_MAX);
        assert_eq!(of(&format!("postgres://h/{longest}")).unwrap(), longest);
        assert!(of("postgres://h/").is_err());
        assert!(of("postgres://h/a%zz").is_err());
    }

    #[test]
    fn any_other_database_name_gets_a_sanitised_form_and_the_hash_of_the_exact_name() {
        let p = RolePrefix::of_database("Fleet-Prod.eu");
        assert!(p.as_str().starts_with("_fleet_prod_eu_"), "{p:?}");
        assert_eq!(p.as_str().len(), "_fleet_prod_eu_".len() + HASH_HEX);
        assert!(RolePrefix::parse(p.as_str()).is_ok());
        // The same name, however the URL escapes it, is the same deployment.
        assert_eq!(RolePrefix::of("postgres://h/Fleet%2DProd.eu").unwrap(), p);
        assert_eq!(RolePrefix::of_database("Fleet-Prod.eu"), p);
    }

    #[test]
    fn names_that_used_to_share_a_prefix_no_longer_do() {
        // Each group made one prefix when every other character was written `_`.
        let groups: [&[&str]; 5] = [
            &[
                "fleet_x_y",
                "fleet-x-y",
                "fleet.x.y",
                "Fleet_X_Y",
                "fleet x y",
                "fleet_x-y",
            ],
            &[
                "fleet_prod",
                "fleet-prod",
                "FLEET_PROD",
                "fleet\u{e9}prod",
                "fleet\"prod",
            ],
            &["_2024db", "2024db", "_2024DB"],
            &["_fleet", "-fleet", ".fleet", "\u{e9}fleet"],
            &["fleet_t_x", "fleet_t_x ", " fleet_t_x", "fleet_t_x\n"],
        ];
        let mut seen = std::collections::HashMap::new();
        for name in groups.iter().flat_map(|g| g.iter()) {
            let p = RolePrefix::of_database(name);
            assert!(RolePrefix::parse(p.as_str()).is_ok(), "{name:?}: {p:?}");
            if let Some(other) = seen.insert(p.clone(), *name) {
                assert_eq!(other, *name, "{other:?} and {name:?} share {p:?}");
            }
        }
        // A database named as another's derived prefix is not plain: it gets its own.
        let derived = RolePrefix::of_database("fleet-x-y");
        assert_ne!(RolePrefix::of_database(derived.as_str()), derived);
    }

    #[test]
    fn long_names_fit_a_role_name_and_differ_by_their_hash() {
        let (a, b) = ("d".repeat(48), format!("{}e", "d".repeat(47)));
        let (pa, pb) = (RolePrefix::of_database(&a), RolePrefix::of_database(&b));
        assert_ne!(pa, pb);
        for long in [&a, &b, &"x-".repeat(100), &"\u{e9}".repeat(60)] {
            let p = RolePrefix::of_database(long);
            assert!(p.as_str().len() <= PREFIX_MAX, "{p:?}");
            for role in DbRole::ALL {
                assert!(role.login_name(&p).len() <= 63, "{role:?} {p:?}");
            }
        }
        // A plain name as long as allowed stays as it is; one character more is hashed.
        let longest = RolePrefix::parse(&"p".repeat(PREFIX_MAX)).unwrap();
        for role in DbRole::ALL {
            assert!(role.login_name(&longest).len() <= 63, "{role:?}");
        }
        assert!(pa.as_str().starts_with('_'));
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
