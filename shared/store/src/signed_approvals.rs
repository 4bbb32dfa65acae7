//! The approvals of an operation's stored hash with what they were signed with, and their
//! approvers' standing now: what fleet-execute judges, right before its call, with
//! `fleet_core::live_quorum` (which approvals count) and `fleet_core::count_signed` (which
//! of their signatures verify).

use chrono::{DateTime, Utc};
use fleet_core::live_quorum::{ApprovalFacts, ApproverStanding, KeyStanding};
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
    /// What each approval presents, in the order of `facts`.
    pub approvals: Vec<RecordedApproval>,
    /// For each approval recorded from a signed batch, the batch's statement as stored
    /// (what its signature signs), in the order of `approvals`; `None` for the others.
    pub batches: Vec<Option<serde_json::Value>>,
    /// The same approvals as the quorum rule reads them (void or not, the key they name).
    pub facts: Vec<ApprovalFacts>,
    /// Each approver's standing now, for the operation's tenant.
    pub standings: Vec<ApproverStanding>,
    pub keys: Vec<RegisteredKey>,
    /// Who submitted the operation, and how many approvals it needs.
    pub submitted_by: Option<String>,
    pub approvals_required: i16,
    pub now: DateTime<Utc>,
}

impl SignedApprovals {
    /// The keys as the quorum rule reads them.
    pub fn key_standings(&self) -> Vec<KeyStanding> {
        self.keys
            .iter()
            .map(|k| KeyStanding {
                key_id: k.key_id.as_str().to_owned(),
                principal: k.principal.clone(),
                registered_at: k.registered_at,
                removed: k.removed_at.is_some(),
            })
            .collect()
    }
}

/// One statement: the outer row (the operation) is there even without approvals. An
/// approver's standing is read through `fleet_approver_standing`, with the owner's rights
/// (this role reads no principals); a principal that no longer exists has none.
const READ: &str = "
SELECT now() AS now, o.submitted_by, o.approvals_required,
       a.principal, a.at, a.key_id, a.signature, a.signed_expires_at, a.voided_at IS NOT NULL AS voided,
       b.statement AS batch_statement,
       s.role AS approver_role, s.removed AS approver_removed, s.granted_at AS approver_granted_at,
       k.principal AS key_principal, k.algorithm, k.public_key, k.rp_id, k.origin,
       k.registered_at, k.removed_at
FROM operations o
LEFT JOIN approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id AND a.payload_hash = $2
LEFT JOIN LATERAL fleet_approver_standing(a.principal, a.tenant_id) s ON true
LEFT JOIN approver_keys k ON k.key_id = a.key_id
LEFT JOIN approval_batches b ON b.batch_id = a.batch_id
WHERE o.operation_id = $1 AND o.tenant_id = $3
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
        let mut batches = Vec::new();
        let mut facts = Vec::new();
        let mut standings = Vec::new();
        let mut keys: Vec<RegisteredKey> = Vec::new();
        for r in &rows {
            let Some(principal) = r.get::<_, Option<String>>("principal") else {
                continue;
            };
            let at: DateTime<Utc> = r.get("at");
            approvals.push(RecordedApproval {
                principal: principal.clone(),
                at,
                signed: presented(r),
            });
            batches.push(r.get::<_, Option<serde_json::Value>>("batch_statement"));
            facts.push(ApprovalFacts {
                principal: principal.clone(),
                payload_hash: payload_hash.to_owned(),
                at,
                key_id: r
                    .get::<_, Option<&[u8]>>("signature")
                    .and(r.get::<_, Option<String>>("key_id")),
                voided: r.get("voided"),
            });
            // A role this build does not know approves nothing: no standing.
            let role = r
                .get::<_, Option<&str>>("approver_role")
                .and_then(fleet_core::Role::parse);
            if let Some(role) = role {
                standings.push(ApproverStanding {
                    principal,
                    role,
                    removed: r.get("approver_removed"),
                    tenant_granted_at: r.get("approver_granted_at"),
                });
            }
            if let Some(k) = key(r) {
                if !keys.iter().any(|known| known.key_id == k.key_id) {
                    keys.push(k);
                }
            }
        }
        let (submitted_by, approvals_required) = rows.first().map_or((None, i16::MAX), |r| {
            (r.get("submitted_by"), r.get("approvals_required"))
        });
        Ok(SignedApprovals {
            approvals,
            batches,
            facts,
            standings,
            keys,
            submitted_by,
            approvals_required,
            now,
        })
    }
}
