//! Principals and their bearer tokens: creation and revocation (for `fleetctl token`) and
//! authentication (for the HTTP API). Only a token's SHA-256 is ever stored; a request is
//! authenticated by looking the hash of the token it presents up by index, so no stored
//! secret is ever compared byte by byte. A token ends at its `expires_at`, may be limited
//! to some of its principal's tenants, and records its last use (at most once a minute).

use chrono::{DateTime, Utc};
use fleet_core::access::{token_tenants, TokenLifetime};
use fleet_core::{Actor, Role, TokenHash};

use crate::component::Administer;
use crate::component::Authenticate;
use crate::rows::role_at;
use crate::StoreAs;
use crate::StoreError;

/// A token to create for `principal` (created with `role` if new).
#[derive(Debug)]
pub struct NewToken<'a> {
    pub token_id: &'a str,
    pub principal: &'a str,
    pub role: Role,
    /// The tenants the token is limited to, each one the principal must have; a new
    /// principal is granted them. Empty: all of the principal's tenants, now and later
    /// (refused for a new principal, which has none).
    pub tenants: &'a [String],
    pub hash: &'a TokenHash,
    pub display_prefix: &'a str,
    /// From now, by the database's clock.
    pub lifetime: TokenLifetime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCreated {
    /// Created; `tenants` is every tenant the token acts for.
    Created {
        tenants: Vec<String>,
        expires_at: DateTime<Utc>,
    },
    /// The principal does not have these tenants: nothing was written (a tenant is granted
    /// deliberately, with `fleetctl principal add`, never by issuing a token).
    TenantsNotGranted { missing: Vec<String> },
    /// A new principal and no tenant named: nothing was written (it would act for none).
    NoTenants,
    /// The principal exists with another role: nothing was written (a role is changed
    /// deliberately, never as a side effect of issuing a token).
    RoleMismatch { existing: String },
    /// The principal was removed: nothing was written (`fleetctl principal add` brings
    /// it back deliberately).
    Removed,
    /// The principal's name or a tenant is not an identifier (`fleet_core::access`):
    /// nothing was written.
    NotAnIdentifier { problem: String },
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
    /// The tenants it acts for: authenticated by a token, those of the principal's the
    /// token is limited to.
    pub tenants: Vec<String>,
}

/// What a presented token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCheck {
    /// A valid token, and whom it lets act (for which tenants).
    Valid(Principal),
    /// A token that was valid until its `expires_at`.
    Expired,
    /// Unknown, revoked, or its principal removed.
    Refused,
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
    pub role: Role,
    /// The tenants it acts for (its principal's, narrowed to its limit).
    pub tenants: Vec<String>,
    /// Whether it was created limited to some tenants.
    pub limited: bool,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub expired: bool,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// One statement, one round trip: the token, its principal, and — at most once a minute per
/// token — the record of its use. The use is written only when the last one recorded is a
/// minute old, so almost every request reads and writes nothing (an UPDATE that matches
/// no row takes no transaction id); concurrent requests at the minute's turn wait on the
/// row lock, then see the fresh value and write nothing more.
const AUTHENTICATE: &str = "
WITH token AS (
    SELECT t.token_id, t.tenants AS limited_to, t.expires_at <= now() AS expired,
           (t.last_used_at IS NULL OR t.last_used_at < now() - interval '60 seconds') AS use_unrecorded,
           p.name, p.role,
           ARRAY(SELECT tenant_id FROM principal_tenants pt WHERE pt.principal = p.name ORDER BY tenant_id) AS tenants
    FROM api_tokens t JOIN principals p ON p.name = t.principal
    WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND p.removed_at IS NULL
), used AS (
    UPDATE api_tokens t SET last_used_at = now()
    FROM token
    WHERE t.token_id = token.token_id AND token.use_unrecorded AND NOT token.expired
      AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '60 seconds')
    RETURNING t.token_id
)
SELECT name, role, tenants, limited_to, expired FROM token";

impl<R: Authenticate> StoreAs<R> {
    /// The principal a presented token lets act, if the token exists, is neither revoked
    /// nor expired, and its principal was not removed.
    pub async fn authenticate(&self, hash: &TokenHash) -> Result<Option<Principal>, StoreError> {
        Ok(match self.check_token(hash).await? {
            TokenCheck::Valid(principal) => Some(principal),
            TokenCheck::Expired | TokenCheck::Refused => None,
        })
    }

    /// What a presented token is, recording its use (at most once a minute) when valid.
    pub async fn check_token(&self, hash: &TokenHash) -> Result<TokenCheck, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(AUTHENTICATE).await?;
        let Some(row) = client.query_opt(&stmt, &[&hash.as_str()]).await? else {
            return Ok(TokenCheck::Refused);
        };
        if row.get::<_, bool>("expired") {
            return Ok(TokenCheck::Expired);
        }
        // The column only holds known roles (a CHECK); an unknown one authenticates nobody.
        let Some(role) = Role::parse(row.get("role")) else {
            return Ok(TokenCheck::Refused);
        };
        let principal_tenants: Vec<String> = row.get("tenants");
        let limited_to: Option<Vec<String>> = row.get("limited_to");
        Ok(TokenCheck::Valid(Principal {
            name: row.get("name"),
            role,
            tenants: token_tenants(&principal_tenants, limited_to.as_deref()),
        }))
    }
}

impl<R: Administer> StoreAs<R> {
    /// Creates the token (and the principal when new, granted the token's tenants) in one
    /// transaction; nothing is written when it is refused.
    pub async fn create_token(&self, t: &NewToken<'_>) -> Result<TokenCreated, StoreError> {
        if let Err(problem) = crate::principal_admin::check_names(t.principal, t.tenants) {
            return Ok(TokenCreated::NotAnIdentifier { problem });
        }
        let mut limit = t.tenants.to_vec();
        limit.sort();
        limit.dedup();
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let new = tx
            .execute(
                "INSERT INTO principals (name, role) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[&t.principal, &t.role.as_str()],
            )
            .await?
            == 1;
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
        if new {
            if limit.is_empty() {
                return Ok(TokenCreated::NoTenants);
            }
            tx.execute(
                "INSERT INTO principal_tenants (principal, tenant_id) SELECT $1, unnest($2::text[])",
                &[&t.principal, &limit],
            )
            .await?;
        }
        let granted: Vec<String> = tx
            .query_one(
                "SELECT ARRAY(SELECT tenant_id FROM principal_tenants WHERE principal = $1 ORDER BY tenant_id)",
                &[&t.principal],
            )
            .await?
            .get(0);
        let missing: Vec<String> = limit
            .iter()
            .filter(|l| !granted.contains(l))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Ok(TokenCreated::TenantsNotGranted { missing });
        }
        let limited_to = (!limit.is_empty()).then_some(&limit);
        let lifetime_s = i64::try_from(t.lifetime.as_secs()).unwrap_or(i64::MAX);
        let expires_at: DateTime<Utc> = tx
            .query_one(
                "INSERT INTO api_tokens (token_id, principal, token_hash, display_prefix, tenants, expires_at)
                 VALUES ($1, $2, $3, $4, $5, now() + $6::bigint * interval '1 second')
                 RETURNING expires_at",
                &[&t.token_id, &t.principal, &t.hash.as_str(), &t.display_prefix, &limited_to, &lifetime_s],
            )
            .await?
            .get(0);
        tx.commit().await?;
        Ok(TokenCreated::Created {
            tenants: token_tenants(&granted, limited_to.map(Vec::as_slice)),
            expires_at,
        })
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

    /// Every token, newest first, with its principal's role and the tenants it acts for.
    pub async fn list_tokens(&self) -> Result<Vec<TokenListing>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT t.token_id, t.display_prefix, t.principal, p.role, t.created_at, t.revoked_at,
                        t.expires_at, t.expires_at <= now() AS expired, t.last_used_at, t.tenants AS limited_to,
                        ARRAY(SELECT tenant_id FROM principal_tenants pt WHERE pt.principal = p.name ORDER BY tenant_id) AS tenants
                 FROM api_tokens t JOIN principals p ON p.name = t.principal
                 ORDER BY t.created_at DESC, t.token_id DESC",
                &[],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let limited_to: Option<Vec<String>> = r.get("limited_to");
                let principal_tenants: Vec<String> = r.get("tenants");
                Ok(TokenListing {
                    token_id: r.get("token_id"),
                    display_prefix: r.get("display_prefix"),
                    principal: r.get("principal"),
                    role: role_at(r, "role")?,
                    tenants: token_tenants(&principal_tenants, limited_to.as_deref()),
                    limited: limited_to.is_some(),
                    created_at: r.get("created_at"),
                    expires_at: r.get("expires_at"),
                    expired: r.get("expired"),
                    last_used_at: r.get("last_used_at"),
                    revoked_at: r.get("revoked_at"),
                })
            })
            .collect()
    }
}
