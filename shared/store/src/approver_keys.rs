//! Approvers' public keys (`fleetctl key add | remove | list`, as the schema's owner: no
//! component role may write them), and the reads that check signatures against them. A
//! key is never deleted or changed; a removal is recorded on its row, with who removed it.

use chrono::{DateTime, Utc};
use fleet_core::{KeyId, PublicKey, RegisteredKey};
use tokio_postgres::Row;

use crate::component::Administer;
use crate::component::DecideApprovals;
use crate::StoreAs;
use crate::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyAdded {
    Added {
        key_id: KeyId,
    },
    /// This public key was registered before (for this principal or another, removed or
    /// not): a key is registered once, ever. Nothing was written.
    AlreadyRegistered {
        principal: String,
        removed: bool,
    },
    UnknownPrincipal,
    /// No finished passkey registration has this key id (or its stored key does not
    /// hash to it).
    NoSuchRequest,
    /// Only approvers approve, so only approvers have keys.
    NotAnApprover {
        role: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRemoved {
    Removed { principal: String },
    AlreadyRemoved,
    NotFound,
}

/// One key as `fleetctl key list` shows it.
#[derive(Debug, Clone)]
pub struct KeyListing {
    pub key_id: String,
    pub principal: String,
    pub registered_at: DateTime<Utc>,
    pub registered_by: String,
    pub removed_at: Option<DateTime<Utc>>,
    pub removed_by: Option<String>,
}

/// A stored key as the signature rule reads it; a row whose bytes are not a usable public
/// key (only possible by writing the table around `fleetctl`) is left out, so nothing it
/// "signed" counts.
pub(crate) fn registered_key(r: &Row) -> Option<RegisteredKey> {
    Some(RegisteredKey {
        key_id: KeyId::parse(r.get("key_id"))?,
        principal: r.get("principal"),
        public_key: PublicKey::stored(
            r.get("algorithm"),
            r.get("public_key"),
            r.get("rp_id"),
            r.get("origin"),
        )?,
        registered_at: r.get("registered_at"),
        removed_at: r.get("removed_at"),
    })
}

impl<R: Administer> StoreAs<R> {
    /// Registers the Ed25519 `key` for `principal`, recording `by` (the administrator) as who did it.
    pub async fn add_approver_key(
        &self,
        principal: &str,
        key: &PublicKey,
        by: &str,
    ) -> Result<KeyAdded, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let Some(who) = tx
            .query_opt(
                "SELECT role, removed_at IS NOT NULL FROM principals WHERE name = $1 FOR SHARE",
                &[&principal],
            )
            .await?
        else {
            return Ok(KeyAdded::UnknownPrincipal);
        };
        let (role, removed): (String, bool) = (who.get(0), who.get(1));
        if removed {
            return Ok(KeyAdded::UnknownPrincipal);
        }
        if role != "approver" {
            return Ok(KeyAdded::NotAnApprover { role });
        }
        let key_id = key.key_id();
        let inserted = tx
            .execute(
                "INSERT INTO approver_keys (key_id, principal, algorithm, public_key, registered_by)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[
                    &key_id.as_str(),
                    &principal,
                    &key.algorithm(),
                    &key.to_stored_bytes(),
                    &by,
                ],
            )
            .await?;
        if inserted == 0 {
            let row = tx
                .query_one(
                    "SELECT principal, removed_at IS NOT NULL FROM approver_keys WHERE key_id = $1 OR public_key = $2",
                    &[&key_id.as_str(), &key.to_stored_bytes()],
                )
                .await?;
            return Ok(KeyAdded::AlreadyRegistered {
                principal: row.get(0),
                removed: row.get(1),
            });
        }
        tx.commit().await?;
        Ok(KeyAdded::Added { key_id })
    }

    /// Removes a key: from now on nothing it signed counts, including approvals it signed
    /// before (an operation they approved and that has not run yet will not run).
    pub async fn remove_approver_key(
        &self,
        key_id: &KeyId,
        by: &str,
    ) -> Result<KeyRemoved, StoreError> {
        let client = self.client().await?;
        let removed = client
            .query_opt(
                "UPDATE approver_keys SET removed_at = now(), removed_by = $2, removed_as = session_user
                 WHERE key_id = $1 AND removed_at IS NULL RETURNING principal",
                &[&key_id.as_str(), &by],
            )
            .await?;
        if let Some(row) = removed {
            return Ok(KeyRemoved::Removed {
                principal: row.get(0),
            });
        }
        let exists = client
            .query_opt(
                "SELECT 1 FROM approver_keys WHERE key_id = $1",
                &[&key_id.as_str()],
            )
            .await?;
        Ok(if exists.is_some() {
            KeyRemoved::AlreadyRemoved
        } else {
            KeyRemoved::NotFound
        })
    }

    /// Every key, removed ones included, by principal and registration.
    pub async fn list_approver_keys(&self) -> Result<Vec<KeyListing>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT key_id, principal, registered_at, registered_by, removed_at, removed_by
                 FROM approver_keys ORDER BY principal, registered_at, key_id",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| KeyListing {
                key_id: r.get("key_id"),
                principal: r.get("principal"),
                registered_at: r.get("registered_at"),
                registered_by: r.get("registered_by"),
                removed_at: r.get("removed_at"),
                removed_by: r.get("removed_by"),
            })
            .collect())
    }
}

impl<R: DecideApprovals> StoreAs<R> {
    /// The key `key_id` as registered (removed or not), with the database clock's now:
    /// what the API checks an approver's signature against before recording it.
    pub async fn approver_key(
        &self,
        key_id: &KeyId,
    ) -> Result<(Option<RegisteredKey>, DateTime<Utc>), StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT now() AS now, k.key_id, k.principal, k.algorithm, k.public_key, k.rp_id, k.origin,
                        k.registered_at, k.removed_at
                 FROM (SELECT 1) AS one
                 LEFT JOIN approver_keys k ON k.key_id = $1",
                &[&key_id.as_str()],
            )
            .await?;
        let key = row
            .get::<_, Option<String>>("key_id")
            .and_then(|_| registered_key(&row));
        Ok((key, row.get("now")))
    }
}
