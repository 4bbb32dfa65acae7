//! Approvers' and administrators' public keys (`fleetctl key add | remove | list`, as the
//! schema's owner: no component role may write them), and the reads that check signatures
//! against them. A key is never deleted or changed; a removal is recorded on its row, with
//! who removed it. Every key is registered with a registration statement its registrar
//! signed (an administrator's key, or the deployment's evidence key for the first
//! administrators: `fleet_core::key_registration`, migrations/0075).

use chrono::{DateTime, Utc};
use fleet_core::key_registration::{KeyRegistration, Registrar, RegistrarKey};
use fleet_core::{KeyId, PublicKey, RegisteredKey};
use tokio_postgres::{Row, Transaction};

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
    /// Only approvers (who sign approvals) and administrators (who sign registrations)
    /// have keys; a passkey is an approver's only.
    NotAnApprover {
        role: String,
    },
    /// The key signing the registration may not: not a live administrator's registered
    /// Ed25519 key, or the deployment's evidence key registering anything but an
    /// administrator's Ed25519 key. Nothing was written.
    RegistrarRefused {
        reason: String,
    },
}

/// A registration signed and ready to be written with its key.
pub(crate) struct SignedRegistration {
    pub statement: serde_json::Value,
    pub signature: Vec<u8>,
    pub registrar_key_id: String,
    pub registered_at: DateTime<Utc>,
}

/// Signs the registration of `key` for `principal` (of `role`) with `registrar`, within
/// `tx`: the principal's tenants and the time are the database's, and an administrator
/// registrar must hold a live registered key. `Err(KeyAdded)` says why it may not.
pub(crate) async fn sign_registration(
    tx: &Transaction<'_>,
    principal: &str,
    role: &str,
    key: &PublicKey,
    by: &str,
    registrar: RegistrarKey<'_>,
) -> Result<Result<SignedRegistration, KeyAdded>, StoreError> {
    let refused = |reason: &str| {
        Ok(Err(KeyAdded::RegistrarRefused {
            reason: reason.to_owned(),
        }))
    };
    let signer = registrar.key().public_key();
    let who = match registrar {
        RegistrarKey::EvidenceKey(_) => Registrar::EvidenceKey {
            key: signer.clone(),
        },
        RegistrarKey::Admin(_) => {
            let row = tx
                .query_opt(
                    "SELECT k.principal, p.role, k.removed_at IS NOT NULL AS removed
                     FROM approver_keys k JOIN principals p ON p.name = k.principal
                     WHERE k.key_id = $1 FOR SHARE OF k",
                    &[&signer.key_id().as_str()],
                )
                .await?;
            let Some(row) = row else {
                return refused("the signing key is not registered");
            };
            if row.get::<_, String>("role") != "admin" || row.get::<_, bool>("removed") {
                return refused("the signing key is not a live administrator's key");
            }
            Registrar::Admin {
                principal: row.get("principal"),
                key_id: signer.key_id(),
            }
        }
    };
    let facts = tx
        .query_one(
            "SELECT now() AS now, ARRAY(SELECT tenant_id FROM principal_tenants
                                        WHERE principal = $1 ORDER BY tenant_id) AS tenants",
            &[&principal],
        )
        .await?;
    let registration = KeyRegistration {
        principal: principal.to_owned(),
        role: role.to_owned(),
        tenants: facts.get("tenants"),
        key: key.clone(),
        registered_at: facts.get("now"),
        registered_by: by.to_owned(),
        registrar: who,
    };
    if let Some(problem) = registration.shape_problem() {
        return refused(problem);
    }
    // The registrar was made from this very key: signing cannot name another.
    let Ok(signature) = registration.sign(registrar.key()) else {
        return refused("the signing key is not the registrar's");
    };
    Ok(Ok(SignedRegistration {
        statement: registration.to_json(),
        signature: signature.to_bytes(),
        registrar_key_id: registration.registrar.key_id().as_str().to_owned(),
        registered_at: registration.registered_at,
    }))
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
    /// The key that signed its registration; `None` for a key registered before
    /// registrations were signed.
    pub registrar_key_id: Option<String>,
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

/// Inserts `key` (a passkey with its `credential_id`) for `principal` as `signed`, within
/// `tx`. `Some` when the key or credential is registered already: who holds it, and
/// whether it was removed since.
pub(crate) async fn insert_key(
    tx: &Transaction<'_>,
    key_id: &KeyId,
    principal: &str,
    key: &PublicKey,
    credential_id: Option<&[u8]>,
    by: &str,
    signed: &SignedRegistration,
) -> Result<Option<KeyAdded>, StoreError> {
    let (rp_id, origin) = match key {
        PublicKey::Passkey(scope) => (Some(scope.rp_id.as_str()), Some(scope.origin.as_str())),
        PublicKey::Ed25519(_) => (None, None),
    };
    let public_key = key.to_stored_bytes();
    let inserted = tx
        .execute(
            "INSERT INTO approver_keys
                 (key_id, principal, algorithm, public_key, credential_id, rp_id, origin, registered_by,
                  registered_at, registration, registration_signature, registrar_key_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
            &[
                &key_id.as_str(),
                &principal,
                &key.algorithm(),
                &public_key,
                &credential_id,
                &rp_id,
                &origin,
                &by,
                &signed.registered_at,
                &signed.statement,
                &signed.signature,
                &signed.registrar_key_id,
            ],
        )
        .await?;
    if inserted == 1 {
        return Ok(None);
    }
    let row = tx
        .query_one(
            "SELECT principal, removed_at IS NOT NULL FROM approver_keys
             WHERE key_id = $1 OR public_key = $2 OR credential_id = $3 LIMIT 1",
            &[&key_id.as_str(), &public_key, &credential_id],
        )
        .await?;
    Ok(Some(KeyAdded::AlreadyRegistered {
        principal: row.get(0),
        removed: row.get(1),
    }))
}

impl<R: Administer> StoreAs<R> {
    /// Registers the Ed25519 `key` for `principal` (an approver or an administrator),
    /// recording `by` (the administrator, as they name themselves) as who did it, with the
    /// registration statement signed by `registrar`.
    pub async fn add_approver_key(
        &self,
        principal: &str,
        key: &PublicKey,
        by: &str,
        registrar: RegistrarKey<'_>,
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
        if role != "approver" && role != "admin" {
            return Ok(KeyAdded::NotAnApprover { role });
        }
        let signed = match sign_registration(&tx, principal, &role, key, by, registrar).await? {
            Ok(signed) => signed,
            Err(refused) => return Ok(refused),
        };
        let key_id = key.key_id();
        if let Some(met) = insert_key(&tx, &key_id, principal, key, None, by, &signed).await? {
            return Ok(met);
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
                "SELECT key_id, principal, registered_at, registered_by, removed_at, removed_by,
                        registrar_key_id
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
                registrar_key_id: r.get("registrar_key_id"),
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
