//! Managing principals (`fleetctl principal add | list | remove`): who may sign in to the
//! console (by the issuer's subject), with which role, for which tenants. Removing a
//! principal keeps its name, which the history cites, and takes everything else away in
//! one transaction: tenants, tokens, sessions and subject (and, by the database's trigger,
//! its approver keys and its approvals of operations not yet started).

use chrono::{DateTime, Utc};
use fleet_core::access::{check_principal_name, check_tenant_id};
use fleet_core::Role;

use crate::component::Administer;
use crate::rows::role_at;
use crate::StoreAs;
use crate::StoreError;

/// A principal to add, or to grant more tenants (and a subject it has none of).
#[derive(Debug)]
pub struct NewPrincipal<'a> {
    pub name: &'a str,
    pub role: Role,
    pub tenants: &'a [String],
    pub oidc_subject: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrincipalAdded {
    /// Created, or reinstated after a removal; `tenants` is every tenant it now has.
    Added { tenants: Vec<String> },
    /// It existed with this role: the tenants add up, the subject is set if it had none.
    Updated { tenants: Vec<String> },
    /// It exists with another role: nothing was written.
    RoleMismatch { existing: String },
    /// It already signs in as another subject: nothing was written (remove it first).
    SubjectMismatch,
    /// Another principal signs in as this subject: nothing was written.
    SubjectTaken { by: String },
    /// The name or a tenant is not an identifier (`fleet_core::access`): nothing was
    /// written.
    NotAnIdentifier { problem: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrincipalRemoved {
    Removed {
        tokens_revoked: u64,
        sessions_ended: u64,
        /// Its approver keys, revoked by the database as it was marked removed.
        keys_revoked: i64,
        /// Its approvals of operations not yet started, voided (kept, no longer counted).
        approvals_voided: i64,
    },
    AlreadyRemoved,
    NotFound,
}

/// One principal as `fleetctl principal list` shows it.
#[derive(Debug, Clone)]
pub struct PrincipalListing {
    pub name: String,
    pub role: Role,
    pub tenants: Vec<String>,
    pub oidc_subject: Option<String>,
    /// The broker user it speaks as on the queue door, if it has one.
    pub broker_user: Option<String>,
    pub active_tokens: i64,
    pub created_at: DateTime<Utc>,
    pub removed_at: Option<DateTime<Utc>>,
}

/// Whether a principal's name and tenants are identifiers, the rule every door applies
/// (the table's CHECK holds the name's characters too; tenants are checked here alone).
pub(crate) fn check_names(name: &str, tenants: &[String]) -> Result<(), String> {
    check_principal_name(name)?;
    tenants.iter().try_for_each(|t| check_tenant_id(t))
}

impl<R: Administer> StoreAs<R> {
    /// Adds (or reinstates, or extends) a principal in one transaction.
    pub async fn add_principal(&self, p: &NewPrincipal<'_>) -> Result<PrincipalAdded, StoreError> {
        if let Err(problem) = check_names(p.name, p.tenants) {
            return Ok(PrincipalAdded::NotAnIdentifier { problem });
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let inserted = tx
            .execute(
                "INSERT INTO principals (name, role) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[&p.name, &p.role.as_str()],
            )
            .await?
            == 1;
        let row = tx
            .query_one(
                "SELECT role, oidc_subject, removed_at IS NOT NULL AS removed FROM principals WHERE name = $1 FOR UPDATE",
                &[&p.name],
            )
            .await?;
        let (role, subject, removed): (String, Option<String>, bool) =
            (row.get(0), row.get(1), row.get(2));
        if removed {
            // A removed principal has nothing left to contradict: it comes back as asked,
            // with none of its old keys (revoked at its removal, for good) and none of its
            // old approvals counting (voided then; a grant made now is newer than any).
            tx.execute(
                "UPDATE principals SET role = $2, removed_at = NULL WHERE name = $1",
                &[&p.name, &p.role.as_str()],
            )
            .await?;
        } else if role != p.role.as_str() {
            return Ok(PrincipalAdded::RoleMismatch { existing: role });
        }
        if let Some(wanted) = p.oidc_subject {
            match subject.as_deref() {
                Some(has) if has != wanted => return Ok(PrincipalAdded::SubjectMismatch),
                Some(_) => {}
                None => {
                    let holder = tx
                        .query_opt(
                            "SELECT name FROM principals WHERE oidc_subject = $1",
                            &[&wanted],
                        )
                        .await?;
                    if let Some(holder) = holder {
                        return Ok(PrincipalAdded::SubjectTaken { by: holder.get(0) });
                    }
                    tx.execute(
                        "UPDATE principals SET oidc_subject = $2 WHERE name = $1",
                        &[&p.name, &wanted],
                    )
                    .await?;
                }
            }
        }
        tx.execute(
            "INSERT INTO principal_tenants (principal, tenant_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING",
            &[&p.name, &p.tenants],
        )
        .await?;
        let tenants: Vec<String> = tx
            .query_one(
                "SELECT ARRAY(SELECT tenant_id FROM principal_tenants WHERE principal = $1 ORDER BY tenant_id)",
                &[&p.name],
            )
            .await?
            .get(0);
        tx.commit().await?;
        Ok(if inserted || removed {
            PrincipalAdded::Added { tenants }
        } else {
            PrincipalAdded::Updated { tenants }
        })
    }

    /// Every principal, by name, removed ones included (marked).
    pub async fn list_principals(&self) -> Result<Vec<PrincipalListing>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT p.name, p.role, p.oidc_subject, p.broker_user, p.created_at, p.removed_at,
                        ARRAY(SELECT tenant_id FROM principal_tenants pt WHERE pt.principal = p.name ORDER BY tenant_id) AS tenants,
                        (SELECT count(*) FROM api_tokens t WHERE t.principal = p.name AND t.revoked_at IS NULL AND t.expires_at > now()) AS active_tokens
                 FROM principals p ORDER BY p.name",
                &[],
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(PrincipalListing {
                    name: r.get("name"),
                    role: role_at(r, "role")?,
                    tenants: r.get("tenants"),
                    oidc_subject: r.get("oidc_subject"),
                    broker_user: r.get("broker_user"),
                    active_tokens: r.get("active_tokens"),
                    created_at: r.get("created_at"),
                    removed_at: r.get("removed_at"),
                })
            })
            .collect()
    }

    /// Removes a principal: its tokens are revoked, its sessions ended, its tenants and
    /// subject taken away, all at once; it can no longer sign in, call the API or act. The
    /// database revokes its approver keys and voids its approvals of operations not yet
    /// started in the same transaction (migrations/0055_live_approvers.sql): an operation
    /// they had approved goes back to pending if the rest no longer make its quorum.
    pub async fn remove_principal(&self, name: &str) -> Result<PrincipalRemoved, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let Some(row) = tx
            .query_opt(
                "SELECT removed_at IS NOT NULL FROM principals WHERE name = $1 FOR UPDATE",
                &[&name],
            )
            .await?
        else {
            return Ok(PrincipalRemoved::NotFound);
        };
        if row.get::<_, bool>(0) {
            return Ok(PrincipalRemoved::AlreadyRemoved);
        }
        let tokens_revoked = tx
            .execute(
                "UPDATE api_tokens SET revoked_at = now() WHERE principal = $1 AND revoked_at IS NULL",
                &[&name],
            )
            .await?;
        let sessions_ended = tx
            .execute(
                "DELETE FROM console_sessions WHERE principal = $1",
                &[&name],
            )
            .await?;
        // Marked removed before its tenants go, so the database's trigger voids its
        // approvals for that reason (`approver_removed`) rather than one tenant at a time.
        tx.execute(
            "UPDATE principals SET oidc_subject = NULL, broker_user = NULL, removed_at = now() WHERE name = $1",
            &[&name],
        )
        .await?;
        tx.execute(
            "DELETE FROM principal_tenants WHERE principal = $1",
            &[&name],
        )
        .await?;
        // What the trigger did, in this transaction (whose now() is the one it recorded).
        let undone = tx
            .query_one(
                "SELECT (SELECT count(*) FROM approver_keys WHERE principal = $1 AND removed_at = now()),
                        (SELECT count(*) FROM approvals WHERE principal = $1 AND voided_at = now())",
                &[&name],
            )
            .await?;
        tx.commit().await?;
        Ok(PrincipalRemoved::Removed {
            tokens_revoked,
            sessions_ended,
            keys_revoked: undone.get(0),
            approvals_voided: undone.get(1),
        })
    }
}
