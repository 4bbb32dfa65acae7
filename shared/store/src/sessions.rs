//! Console sign-in: the principal an OpenID Connect subject names, and server-side
//! sessions keyed by the SHA-256 of the secret only the person's cookie holds. A session
//! ends when it expires (database clock), when the person signs out, or when the
//! principal is removed.

use fleet_core::session::SessionHash;
use fleet_core::{ClaimedAccess, Role};
use tokio_postgres::Row;

use crate::component::Authenticate;
use crate::StoreAs;
use crate::{Principal, StoreError};

/// Expired sessions deleted whenever one starts: housekeeping in small, bounded steps.
const EXPIRED_PER_SIGN_IN: i64 = 100;

const TENANTS: &str = "ARRAY(SELECT tenant_id FROM principal_tenants pt WHERE pt.principal = p.name ORDER BY tenant_id) AS tenants";

fn principal_of(row: &Row) -> Option<Principal> {
    // The column only holds known roles (a CHECK); an unknown one signs nobody in.
    Role::parse(row.get("role")).map(|role| Principal {
        name: row.get("name"),
        role,
        tenants: row.get("tenants"),
    })
}

impl<R: Authenticate> StoreAs<R> {
    /// The principal the issuer's `subject` belongs to, unless it was removed.
    pub async fn principal_by_oidc_subject(
        &self,
        subject: &str,
    ) -> Result<Option<Principal>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT p.name, p.role, {TENANTS} FROM principals p
                 WHERE p.oidc_subject = $1 AND p.removed_at IS NULL"
            ))
            .await?;
        Ok(client
            .query_opt(&stmt, &[&subject])
            .await?
            .as_ref()
            .and_then(principal_of))
    }

    /// Starts a session of `principal` lasting `ttl_s` seconds. `false` when the principal
    /// was removed meanwhile (nothing is written).
    pub async fn start_session(
        &self,
        hash: &SessionHash,
        principal: &str,
        signed_in_with: &str,
        claimed: Option<&ClaimedAccess>,
        ttl_s: u64,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM console_sessions WHERE session_hash IN (
                     SELECT session_hash FROM console_sessions WHERE expires_at < now()
                     ORDER BY expires_at LIMIT $1)",
                &[&EXPIRED_PER_SIGN_IN],
            )
            .await?;
        let ttl_s = ttl_s as f64;
        let role = claimed.map(|c| c.role.as_str());
        let tenants = claimed.map(|c| c.tenants.as_slice());
        let started = client
            .execute(
                "INSERT INTO console_sessions (session_hash, principal, signed_in_with, expires_at, role, tenants)
                 SELECT $1, name, $3, now() + make_interval(secs => $4), $5, $6
                 FROM principals WHERE name = $2 AND removed_at IS NULL",
                &[&hash.as_str(), &principal, &signed_in_with, &ttl_s, &role, &tenants],
            )
            .await?;
        Ok(started == 1)
    }

    /// The principal of a live session (not expired, principal not removed), with its
    /// current role and tenants, or those its sign-in's claims gave the session.
    pub async fn session_principal(
        &self,
        hash: &SessionHash,
    ) -> Result<Option<Principal>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT p.name, COALESCE(s.role, p.role) AS role,
                        COALESCE(s.tenants, ARRAY(SELECT tenant_id FROM principal_tenants pt
                                                  WHERE pt.principal = p.name ORDER BY tenant_id)) AS tenants
                 FROM console_sessions s JOIN principals p ON p.name = s.principal
                 WHERE s.session_hash = $1 AND s.expires_at > now() AND p.removed_at IS NULL",
            )
            .await?;
        Ok(client
            .query_opt(&stmt, &[&hash.as_str()])
            .await?
            .as_ref()
            .and_then(principal_of))
    }

    /// Ends a session (signing out). Ending one that does not exist is not an error.
    pub async fn end_session(&self, hash: &SessionHash) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM console_sessions WHERE session_hash = $1",
                &[&hash.as_str()],
            )
            .await?;
        Ok(())
    }
}
