//! The approvals of an operation's stored hash with what they were signed with: what
//! fleet-execute verifies, right before its call, with `fleet_core::count_signed`.

use chrono::{DateTime, Utc};
use fleet_core::{
    KeyId, OpRef, PresentedSignature, PublicKey, RecordedApproval, RegisteredKey, Signature,
};
use tokio_postgres::Row;

use crate::component::ClaimAndCall;
use crate::StoreAs;
use crate::StoreError;

/// Every approval of the hash, every key they name, and the database clock's now.
#[derive(Debug, Clone)]
pub struct SignedApprovals {
    pub approvals: Vec<RecordedApproval>,
    pub keys: Vec<RegisteredKey>,
    pub now: DateTime<Utc>,
}

/// One statement: the outer row is there even without approvals, for `now`.
const READ: &str = "
SELECT now() AS now, a.principal, a.at, a.key_id, a.signature, a.signed_expires_at,
       k.principal AS key_principal, k.algorithm, k.public_key, k.rp_id, k.origin,
       k.registered_at, k.removed_at
FROM (SELECT 1) AS one
LEFT JOIN approvals a ON a.operation_id = $1 AND a.tenant_id = $3 AND a.payload_hash = $2
LEFT JOIN approver_keys k ON k.key_id = a.key_id
ORDER BY a.at, a.principal";

/// What an approvals row presents; `None` when it carries no readable signature (then it
/// counts as unsigned: nothing unreadable is ever counted).
fn presented(r: &Row) -> Option<PresentedSignature> {
    Some(PresentedSignature {
        key_id: KeyId::parse(r.get::<_, Option<&str>>("key_id")?)?,
        signature: Signature::from_bytes(r.get::<_, Option<&[u8]>>("signature")?)?,
        expires_at: r.get::<_, Option<DateTime<Utc>>>("signed_expires_at")?,
    })
}

fn key(r: &Row) -> Option<RegisteredKey> {
    Some(RegisteredKey {
        key_id: KeyId::parse(r.get::<_, Option<&str>>("key_id")?)?,
        principal: r.get::<_, Option<String>>("key_principal")?,
        public_key: PublicKey::stored(
            r.get::<_, Option<&str>>("algorithm")?,
            r.get::<_, Option<&[u8]>>("public_key")?,
            r.get("rp_id"),
            r.get("origin"),
        )?,
        registered_at: r.get::<_, Option<DateTime<Utc>>>("registered_at")?,
        removed_at: r.get("removed_at"),
    })
}

impl<R: ClaimAndCall> StoreAs<R> {
    /// The approvals of `payload_hash` for `op`, with their keys.
    pub async fn signed_approvals(
        &self,
        op: OpRef<'_>,
        payload_hash: &str,
    ) -> Result<SignedApprovals, StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(READ).await?;
        let rows = client
            .query(&read, &[&op.operation_id, &payload_hash, &op.tenant_id])
            .await?;
        let now = rows.first().map_or_else(Utc::now, |r| r.get("now"));
        let mut approvals = Vec::new();
        let mut keys: Vec<RegisteredKey> = Vec::new();
        for r in &rows {
            let Some(principal) = r.get::<_, Option<String>>("principal") else {
                continue;
            };
            approvals.push(RecordedApproval {
                principal,
                at: r.get("at"),
                signed: presented(r),
            });
            if let Some(k) = key(r) {
                if !keys.iter().any(|known| known.key_id == k.key_id) {
                    keys.push(k);
                }
            }
        }
        Ok(SignedApprovals {
            approvals,
            keys,
            now,
        })
    }
}
