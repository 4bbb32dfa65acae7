//! Principals and their bearer tokens: creation and revocation (for `fleetctl token`) and
//! authentication (for the HTTP API). Only a token's SHA-256 is ever stored; a request is
//! authenticated by looking the hash of the token it presents up by index, so no stored
//! secret is ever compared byte by byte.

use chrono::{DateTime, Utc};
use fleet_core::{Actor, Role, TokenHash};

use crate::{Store, StoreError};

/// A token to create for `principal` (created with `role` if new) and the tenants to
/// grant it.
#[derive(Debug)]
pub struct NewToken<'a> {
    pub token_id: &'a str,
    pub principal: &'a str,
    pub role: Role,
    pub tenants: &'a [String],
    pub hash: &'a TokenHash,
    pub display_prefix: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCreated {
    /// Created; `tenants` is every tenant the principal may now act for.
    Created { tenants: Vec<String> },
    /// The principal exists with another role: nothing was written (a role is changed
    /// deliberately, never as a side effect of issuing a token).
    RoleMismatch { existing: String },
    /// The principal was removed: nothing was written (`fleetctl principal add` brings
    /// it back deliberately).
    Removed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRevoked {
    Revoked {
        token_id: String,
        principal: String,
    },
    AlreadyRevoked {
        token_id: String,
    },
    NotFound,
    /// A display prefix shared by several tokens: name it by its id instead.
    Ambiguous(usize),
}

/// Who a valid token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub role: Role,
    pub tenants: Vec<String>,
}

impl Principal {
    pub fn acts_for(&self, tenant_id: &str) -> bool {
        self.tenants.iter().any(|t| t == tenant_id)
    }

    /// The principal as the authorization rules see it.
    pub fn actor(&self) -> Actor<'_> {
        Actor {
            name: &self.name,
            role: self.role,
            tenants: &self.tenants,
        }
    }
}

/// One token as `fleetctl token list` shows it (never the token, never its hash).
#[derive(Debug, Clone)]
pub struct TokenListing {
    pub token_id: String,
    pub display_prefix: String,
    pub principal: String,
    pub role: String,
    pub tenants: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

const AUTHENTICATE: &str = "
SELECT p.name, p.role,
       ARRAY(SELECT tenant_id FROM principal_tenants pt WHERE pt.principal = p.name ORDER BY tenant_id) AS tenants
FROM api_tokens t JOIN principals p ON p.name = t.principal
WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND p.removed_at IS NULL";

impl Store {
    /// The principal a presented token belongs to, if the token exists and is not revoked.
    pub async fn authenticate(&self, hash: &TokenHash) -> Result<Option<Principal>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(AUTHENTICATE).await?;
        let Some(row) = client.query_opt(&stmt, &[&hash.as_str()]).await? else {
            return Ok(None);
        };
        // The column only holds known roles (a CHECK); an unknown one authenticates nobody.
        Ok(Role::parse(row.get("role")).map(|role| Principal {
            name: row.get("name"),
            role,
            tenants: row.get("tenants"),
        }))
    }

    /// Creates the token (and the principal when new), granting `tenants`, in one
    /// transaction.
    pub async fn create_token(&self, t: &NewToken<'_>) -> Result<TokenCreated, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute(
            "INSERT INTO principals (name, role) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            &[&t.principal, &t.role.as_str()],
        )
        .await?;
        let row = tx
            .query_one(
                "SELECT role, removed_at IS NOT NULL FROM principals WHERE name = $1 FOR UPDATE",
                &[&t.principal],
            )
            .await?;
        let (existing, removed): (String, bool) = (row.get(0), row.get(1));
        if removed {
            return Ok(TokenCreated::Removed);
        }
        if existing != t.role.as_str() {
            return Ok(TokenCreated::RoleMismatch { existing });
        }
        tx.execute(
            "INSERT INTO principal_tenants (principal, tenant_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING",
            &[&t.principal, &t.tenants],
        )
        .await?;
        tx.execute(
            "INSERT INTO api_tokens (token_id, principal, token_hash, display_prefix) VALUES ($1, $2, $3, $4)",
            &[&t.token_id, &t.principal, &t.hash.as_str(), &t.display_prefix],
        )
        .await?;
        let tenants: Vec<String> = tx
            .query_one("SELECT ARRAY(SELECT tenant_id FROM principal_tenants WHERE principal = $1 ORDER BY tenant_id)", &[&t.principal])
            .await?
            .get(0);
        tx.commit().await?;
        Ok(TokenCreated::Created { tenants })
    }

    /// Revokes the token named by its id, its display prefix, or the token itself (by its
    /// hash). Requests carrying it are refused from the next one on.
    pub async fn revoke_token(
        &self,
        id_or_prefix: &str,
        hash: Option<&TokenHash>,
    ) -> Result<TokenRevoked, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let rows = tx
            .query(
                "SELECT token_id, principal, revoked_at IS NOT NULL FROM api_tokens
                 WHERE token_id = $1 OR display_prefix = $1 OR token_hash = $2 FOR UPDATE",
                &[&id_or_prefix, &hash.map(TokenHash::as_str)],
            )
            .await?;
        let row = match rows.as_slice() {
            [] => return Ok(TokenRevoked::NotFound),
            [row] => row,
            several => return Ok(TokenRevoked::Ambiguous(several.len())),
        };
        let (token_id, principal, revoked): (String, String, bool) =
            (row.get(0), row.get(1), row.get(2));
        if revoked {
            return Ok(TokenRevoked::AlreadyRevoked { token_id });
        }
        tx.execute(
            "UPDATE api_tokens SET revoked_at = now() WHERE token_id = $1",
            &[&token_id],
        )
        .await?;
        tx.commit().await?;
        Ok(TokenRevoked::Revoked {
            token_id,
            principal,
        })
    }

    /// Every token, newest first, with its principal's role and tenants.
    pub async fn list_tokens(&self) -> Result<Vec<TokenListing>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT t.token_id, t.display_prefix, t.principal, p.role, t.created_at, t.revoked_at,
                        ARRAY(SELECT tenant_id FROM principal_tenants pt WHERE pt.principal = p.name ORDER BY tenant_id) AS tenants
                 FROM api_tokens t JOIN principals p ON p.name = t.principal
                 ORDER BY t.created_at DESC, t.token_id DESC",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| TokenListing {
                token_id: r.get("token_id"),
                display_prefix: r.get("display_prefix"),
                principal: r.get("principal"),
                role: r.get("role"),
                tenants: r.get("tenants"),
                created_at: r.get("created_at"),
                revoked_at: r.get("revoked_at"),
            })
            .collect())
    }
}
