//! Passkeys: the registrations approvers start in the console (the API keeps the WebAuthn
//! ceremony's state here between its two requests, then the passkey it verified), and the
//! administrator's acceptance that registers one as an approver's key (`fleetctl key
//! accept`, as the schema's owner). See `migrations/0046_passkeys.sql`.

use chrono::{DateTime, Utc};
use fleet_core::{KeyId, PublicKey};
use serde_json::Value;

use crate::component::Administer;
use crate::component::RegisterPasskeys;
use crate::StoreAs;
use crate::{KeyAdded, StoreError};

/// How long a started registration may wait for the browser's answer.
pub const CEREMONY_TTL_S: i64 = 300;

/// A passkey the API verified, as the approver's browser created it.
#[derive(Debug, Clone)]
pub struct VerifiedPasskey {
    pub public_key: PublicKey,
    pub credential_id: Vec<u8>,
}

/// One finished registration, waiting for an administrator (or already accepted).
#[derive(Debug, Clone)]
pub struct PasskeyRequest {
    pub key_id: String,
    pub principal: String,
    pub finished_at: DateTime<Utc>,
    /// When the key was registered from it, if it was.
    pub accepted_at: Option<DateTime<Utc>>,
    pub removed_at: Option<DateTime<Utc>>,
}

/// A passkey the browser may be asked to sign with: its credential id.
#[derive(Debug, Clone)]
pub struct ActivePasskey {
    pub key_id: String,
    pub credential_id: Vec<u8>,
}

impl<R: RegisterPasskeys> StoreAs<R> {
    /// Keeps a new ceremony's state for `principal`, forgetting their unfinished ones.
    pub async fn start_passkey_request(
        &self,
        request_id: &str,
        principal: &str,
        ceremony: &Value,
    ) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute(
            "DELETE FROM passkey_requests WHERE principal = $1 AND finished_at IS NULL",
            &[&principal],
        )
        .await?;
        tx.execute(
            "INSERT INTO passkey_requests (request_id, principal, ceremony) VALUES ($1, $2, $3)",
            &[&request_id, &principal, ceremony],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The state of `principal`'s unfinished ceremony `request_id`, if it started less
    /// than [`CEREMONY_TTL_S`] ago.
    pub async fn passkey_ceremony(
        &self,
        request_id: &str,
        principal: &str,
    ) -> Result<Option<Value>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT ceremony FROM passkey_requests
                 WHERE request_id = $1 AND principal = $2 AND finished_at IS NULL
                   AND started_at > now() - make_interval(secs => $3)",
                &[&request_id, &principal, &(CEREMONY_TTL_S as f64)],
            )
            .await?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Records the passkey the API verified for the ceremony; `false` when the ceremony
    /// is gone (finished, replaced or never started) or the passkey was filed before.
    pub async fn finish_passkey_request(
        &self,
        request_id: &str,
        principal: &str,
        passkey: &VerifiedPasskey,
    ) -> Result<bool, StoreError> {
        let PublicKey::Passkey(scope) = &passkey.public_key else {
            return Ok(false);
        };
        let client = self.client().await?;
        let finished = client
            .execute(
                "UPDATE passkey_requests
                 SET finished_at = now(), ceremony = NULL, key_id = $3, public_key = $4,
                     credential_id = $5, rp_id = $6, origin = $7
                 WHERE request_id = $1 AND principal = $2 AND finished_at IS NULL
                   AND NOT EXISTS (SELECT 1 FROM passkey_requests WHERE key_id = $3)
                   AND NOT EXISTS (SELECT 1 FROM approver_keys WHERE key_id = $3 OR credential_id = $5)",
                &[
                    &request_id,
                    &principal,
                    &passkey.public_key.key_id().as_str(),
                    &passkey.public_key.to_stored_bytes(),
                    &passkey.credential_id,
                    &scope.rp_id,
                    &scope.origin,
                ],
            )
            .await?;
        Ok(finished == 1)
    }

    /// Finished registrations, newest first: `principal`'s, or everyone's.
    pub async fn passkey_requests(
        &self,
        principal: Option<&str>,
    ) -> Result<Vec<PasskeyRequest>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT r.key_id, r.principal, r.finished_at, k.registered_at, k.removed_at
                 FROM passkey_requests r LEFT JOIN approver_keys k ON k.key_id = r.key_id
                 WHERE r.finished_at IS NOT NULL AND ($1::text IS NULL OR r.principal = $1)
                 ORDER BY r.finished_at DESC, r.key_id",
                &[&principal],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| PasskeyRequest {
                key_id: r.get(0),
                principal: r.get(1),
                finished_at: r.get(2),
                accepted_at: r.get(3),
                removed_at: r.get(4),
            })
            .collect())
    }

    /// `principal`'s registered passkeys that count (not removed): what the console asks
    /// the browser to sign with.
    pub async fn active_passkeys(&self, principal: &str) -> Result<Vec<ActivePasskey>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT key_id, credential_id FROM approver_keys
                 WHERE principal = $1 AND algorithm = 'es256' AND removed_at IS NULL
                 ORDER BY registered_at, key_id",
                &[&principal],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| ActivePasskey {
                key_id: r.get(0),
                credential_id: r.get(1),
            })
            .collect())
    }
}

impl<R: Administer> StoreAs<R> {
    /// Registers the passkey of the finished request `key_id` for the principal that
    /// filed it, recording `by` (the administrator). The key id is recomputed from the
    /// stored public key: a request whose key does not match the id the approver was
    /// shown is refused as unknown.
    pub async fn accept_passkey(
        &self,
        key_id: &KeyId,
        by: &str,
        registrar: fleet_core::key_registration::RegistrarKey<'_>,
    ) -> Result<KeyAdded, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let Some(r) = tx
            .query_opt(
                "SELECT r.principal, r.public_key, r.credential_id, r.rp_id, r.origin, p.role,
                        p.removed_at IS NOT NULL AS principal_removed
                 FROM passkey_requests r JOIN principals p ON p.name = r.principal
                 WHERE r.key_id = $1 AND r.finished_at IS NOT NULL FOR SHARE OF p",
                &[&key_id.as_str()],
            )
            .await?
        else {
            return Ok(KeyAdded::NoSuchRequest);
        };
        let principal: String = r.get("principal");
        let public_key = PublicKey::stored(
            "es256",
            r.get("public_key"),
            r.get("rp_id"),
            r.get("origin"),
        )
        .filter(|k| &k.key_id() == key_id);
        let Some(public_key) = public_key else {
            return Ok(KeyAdded::NoSuchRequest);
        };
        if r.get::<_, bool>("principal_removed") {
            return Ok(KeyAdded::UnknownPrincipal);
        }
        let role: String = r.get("role");
        if role != "approver" {
            return Ok(KeyAdded::NotAnApprover { role });
        }
        let PublicKey::Passkey(_) = &public_key else {
            return Ok(KeyAdded::NoSuchRequest);
        };
        let credential_id: Vec<u8> = r.get("credential_id");
        let signed = match crate::approver_keys::sign_registration(
            &tx,
            &principal,
            &role,
            &public_key,
            by,
            registrar,
        )
        .await?
        {
            Ok(signed) => signed,
            Err(refused) => return Ok(refused),
        };
        let registered = crate::approver_keys::insert_key(
            &tx,
            key_id,
            &principal,
            &public_key,
            Some(credential_id.as_slice()),
            by,
            &signed,
        )
        .await?;
        if let Some(met) = registered {
            return Ok(met);
        }
        tx.commit().await?;
        Ok(KeyAdded::Added {
            key_id: key_id.clone(),
        })
    }
}
