//! Which deployment a login role belongs to.
//!
//! Roles belong to the whole Postgres cluster, and a role name alone does not say which
//! database it was made for: an explicit `FLEET_DB_ROLE_PREFIX` may be reused by mistake,
//! and roles made before prefixes were derived one to one may be shared by two databases.
//! So `fleet_store::migrate` writes, when it creates a deployment role, a marker naming
//! its database in the role's comment (`COMMENT ON ROLE`, readable by everyone, changeable
//! only by whoever may administer the role), and before it grants, sets a password or
//! drops anything it asks here whose role it is.

use sqlx::PgConnection;

use crate::StoreError;

/// The start of a deployment role's comment; the database's exact name follows.
const MARKER: &str = "fleet deployment role of database ";

/// The comment that marks a role as belonging to `database`.
pub(crate) fn marker(database: &str) -> String {
    format!("{MARKER}{database}")
}

/// Whose a login role is, seen from one database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// No role has that name.
    Missing,
    /// This database's: marked so, or unmarked and granted `CONNECT` on no other database
    /// (a role made before the marker, which the next migration marks).
    Ours { marked: bool },
    /// Another database's: marked so, or unmarked and granted `CONNECT` on `database`.
    Another { database: String, marked: bool },
}

impl Owner {
    /// Why `login` may not serve `this` database, for an error (`None` when it may).
    pub(crate) fn refusal(&self, login: &str, this: &str) -> Option<String> {
        match self {
            Owner::Missing | Owner::Ours { .. } => None,
            Owner::Another {
                database,
                marked: true,
            } => Some(format!(
                "the database role {login} belongs to the deployment of database {database:?}, not {this:?}"
            )),
            Owner::Another {
                database,
                marked: false,
            } => Some(format!(
                "the database role {login} was not made for database {this:?} and may connect to database {database:?}"
            )),
        }
    }
}

/// Whose `login` is, seen from `database` (which may be dropped already).
pub(crate) async fn owner_of(
    conn: &mut PgConnection,
    login: &str,
    database: &str,
) -> Result<Owner, StoreError> {
    // Only explicit grants count: PUBLIC's CONNECT on a database that never revoked it
    // (`postgres`, a non-fleet database) says nothing of whose the role is.
    let row: Option<(Option<String>, Vec<String>)> = sqlx::query_as(
        "SELECT shobj_description(r.oid, 'pg_authid'),
                ARRAY(SELECT d.datname::text FROM pg_database d, aclexplode(d.datacl) a
                      WHERE a.grantee = r.oid AND a.privilege_type = 'CONNECT' AND d.datname <> $2
                      ORDER BY 1)
         FROM pg_roles r WHERE r.rolname = $1",
    )
    .bind(login)
    .bind(database)
    .fetch_optional(conn)
    .await
    .map_err(|e| StoreError::Migrate(e.to_string()))?;
    let Some((comment, elsewhere)) = row else {
        return Ok(Owner::Missing);
    };
    Ok(owner(comment.as_deref(), &elsewhere, database))
}

/// The decision of [`owner_of`] on what the server said: the role's comment and the other
/// databases it is granted `CONNECT` on.
fn owner(comment: Option<&str>, elsewhere: &[String], database: &str) -> Owner {
    match comment.and_then(|c| c.strip_prefix(MARKER)) {
        Some(marked) if marked == database => Owner::Ours { marked: true },
        Some(marked) => Owner::Another {
            database: marked.to_owned(),
            marked: true,
        },
        None => match elsewhere.first() {
            Some(other) => Owner::Another {
                database: other.clone(),
                marked: false,
            },
            None => Owner::Ours { marked: false },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_decides_and_an_unmarked_role_is_ours_only_if_it_reaches_no_other_database() {
        let this = "fleet-x-y";
        assert_eq!(
            owner(Some(&marker(this)), &["other".into()], this),
            Owner::Ours { marked: true }
        );
        assert_eq!(
            owner(Some(&marker("fleet_x_y")), &[], this),
            Owner::Another {
                database: "fleet_x_y".into(),
                marked: true
            }
        );
        // A prefix of the name is another name.
        assert!(matches!(
            owner(Some(&marker("fleet-x")), &[], this),
            Owner::Another { .. }
        ));
        assert_eq!(owner(None, &[], this), Owner::Ours { marked: false });
        assert_eq!(
            owner(Some("a note of the DBA"), &[], this),
            Owner::Ours { marked: false }
        );
        let shared = owner(None, &["fleet_x_y".into()], this);
        assert_eq!(
            shared,
            Owner::Another {
                database: "fleet_x_y".into(),
                marked: false
            }
        );
        let refusal = shared.refusal("fleet_x_y__api", this).unwrap();
        assert!(refusal.contains("\"fleet_x_y\""), "{refusal}");
        assert_eq!(Owner::Ours { marked: false }.refusal("r", this), None);
    }
}
