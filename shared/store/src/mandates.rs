//! Standing mandates as the API makes, reads and revokes them, and the revocation of one
//! approval. Every write goes through a function of `migrations/0061_mandates.sql` with the
//! owner's rights (no component role may write the tables); these are thin calls.

use chrono::{DateTime, Utc};
use fleet_core::mandate::MandateStanding;
use fleet_core::{KeyId, OpRef, Signature};
use serde_json::Value;
use tokio_postgres::Row;

use crate::component::GrantMandates;
use crate::StoreAs;
use crate::StoreError;

/// A mandate as stored, with what it has used.
#[derive(Debug, Clone, PartialEq)]
pub struct MandateRow {
    pub mandate_id: String,
    pub tenant_id: String,
    /// The statement as signed.
    pub statement: Value,
    pub mandate_hash: String,
    pub signed_by: String,
    pub key_id: String,
    pub created_at: DateTime<Utc>,
    pub standing: MandateStanding,
    pub currency: String,
    pub valid_until: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_by: Option<String>,
}

impl MandateRow {
    fn from_row(r: &Row) -> MandateRow {
        let revoked_at: Option<DateTime<Utc>> = r.get("revoked_at");
        MandateRow {
            mandate_id: r.get("mandate_id"),
            tenant_id: r.get("tenant_id"),
            statement: r.get("statement"),
            mandate_hash: r.get("mandate_hash"),
            signed_by: r.get("signed_by"),
            key_id: r.get("key_id"),
            created_at: r.get("created_at"),
            standing: MandateStanding {
                budget_minor: r.get("budget_minor"),
                spent_minor: r.get("spent_minor"),
                count_limit: i64::from(r.get::<_, i32>("count_limit")),
                used_count: i64::from(r.get::<_, i32>("used_count")),
                revoked: revoked_at.is_some(),
            },
            currency: r.get("currency"),
            valid_until: r.get("valid_until"),
            revoked_at,
            revoked_by: r.get("revoked_by"),
        }
    }

    /// The view the API answers with.
    pub fn to_view(&self, now: DateTime<Utc>) -> Value {
        let s = self.standing;
        serde_json::json!({
            "mandate_id": self.mandate_id,
            "tenant_id": self.tenant_id,
            "statement": self.statement,
            "mandate_hash": self.mandate_hash,
            "signed_by": self.signed_by,
            "key_id": self.key_id,
            "created_at": fleet_core::approval_statement::format_expiry(self.created_at),
            "status": if self.revoked_at.is_some() { "revoked" }
                      else if self.valid_until <= now { "expired" }
                      else { "active" },
            "currency": self.currency,
            "budget_minor": s.budget_minor,
            "spent_minor": s.spent_minor,
            "available_minor": if self.valid_until <= now { 0 } else { s.available_minor() },
            "revoked_minor": s.revoked_minor(),
            "count_limit": s.count_limit,
            "used_count": s.used_count,
            "revoked_at": self.revoked_at.map(fleet_core::approval_statement::format_expiry),
            "revoked_by": self.revoked_by,
        })
    }
}

/// What a mandate's creation came to.
#[derive(Debug)]
pub enum MandateCreated {
    Created(Box<MandateRow>),
    /// A mandate with this id exists already (the same statement sent again is answered
    /// with it; another is a conflict).
    Exists(Box<MandateRow>),
    /// The database refused it: the signer is no live approver of the tenant, or the key
    /// is not theirs and live (its message says which).
    Refused(String),
}

const COLUMNS: &str = "mandate_id, tenant_id, statement, mandate_hash, signed_by, key_id, created_at,
    budget_minor, spent_minor, count_limit, used_count, currency, valid_until, revoked_at, revoked_by";

impl<R: GrantMandates> StoreAs<R> {
    /// Stores a mandate whose signature the caller verified over `statement`'s canonical
    /// bytes, whose hash is `hash`.
    pub async fn create_mandate(
        &self,
        statement: &Value,
        hash: &str,
        signer: &str,
        key_id: &KeyId,
        signature: &Signature,
    ) -> Result<MandateCreated, StoreError> {
        let client = self.client().await?;
        let sql = format!("SELECT {COLUMNS} FROM fleet_mandate_create($1, $2, $3, $4, $5)");
        let sig = signature.to_bytes();
        match client
            .query_one(&sql, &[statement, &hash, &signer, &key_id.as_str(), &sig])
            .await
        {
            Ok(row) => Ok(MandateCreated::Created(Box::new(MandateRow::from_row(
                &row,
            )))),
            Err(e) => {
                let err = StoreError::from(e);
                match err.sqlstate() {
                    Some("23505") => {
                        let id = statement
                            .get("mandate_id")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let tenant = statement
                            .get("tenant_id")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        match self.mandate(id, &[tenant.to_owned()]).await? {
                            Some(row) => Ok(MandateCreated::Exists(Box::new(row))),
                            None => Err(err),
                        }
                    }
                    Some("23514") => Ok(MandateCreated::Refused(match &err {
                        StoreError::Db(e) => e
                            .as_db_error()
                            .map_or_else(String::new, |d| d.message().to_owned()),
                        _ => String::new(),
                    })),
                    _ => Err(err),
                }
            }
        }
    }

    /// One mandate of one of `tenants`.
    pub async fn mandate(
        &self,
        mandate_id: &str,
        tenants: &[String],
    ) -> Result<Option<MandateRow>, StoreError> {
        let client = self.client().await?;
        let sql =
            format!("SELECT {COLUMNS} FROM mandates WHERE mandate_id = $1 AND tenant_id = ANY($2)");
        Ok(client
            .query_opt(&sql, &[&mandate_id, &tenants])
            .await?
            .as_ref()
            .map(MandateRow::from_row))
    }

    /// The mandates of `tenants`, newest first (at most `limit`).
    pub async fn mandates(
        &self,
        tenants: &[String],
        limit: i64,
    ) -> Result<Vec<MandateRow>, StoreError> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM mandates WHERE tenant_id = ANY($1)
             ORDER BY created_at DESC, mandate_id DESC LIMIT $2"
        );
        Ok(client
            .query(&sql, &[&tenants, &limit])
            .await?
            .iter()
            .map(MandateRow::from_row)
            .collect())
    }

    /// Revokes a mandate as `who` (the database allows its signer or an admin; 42501
    /// otherwise). `None`: no such mandate of that tenant.
    pub async fn revoke_mandate(
        &self,
        mandate_id: &str,
        tenant_id: &str,
        who: &str,
    ) -> Result<Option<MandateRow>, StoreError> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM fleet_mandate_revoke($1, $2, $3) WHERE mandate_id IS NOT NULL"
        );
        Ok(client
            .query_opt(&sql, &[&mandate_id, &tenant_id, &who])
            .await?
            .as_ref()
            .map(MandateRow::from_row))
    }

    /// The pending operations `mandate_id` covers now, at most `limit`: those to ring
    /// execute for once the mandate is made.
    pub async fn mandate_pending(
        &self,
        mandate_id: &str,
        limit: i32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let client = self.client().await?;
        Ok(client
            .query(
                "SELECT operation_id, tenant_id FROM fleet_mandate_pending($1, $2)",
                &[&mandate_id, &limit],
            )
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    /// The rule of the policy in force for `tenant_id` and `action` (one action's entry of
    /// `policies.rules`), read with the owner's rights: what "am I covered?" is judged
    /// against. `None`: no policy is in force.
    pub async fn mandate_rule(
        &self,
        tenant_id: &str,
        action: fleet_core::Action,
    ) -> Result<Option<Value>, StoreError> {
        let client = self.client().await?;
        Ok(client
            .query_one(
                "SELECT fleet_mandate_rule($1, $2)",
                &[&tenant_id, &action.wire_name()],
            )
            .await?
            .get(0))
    }

    /// Revokes `principal`'s approval of an unstarted operation, as `who` (the approver
    /// itself or an admin). `false`: there was no live approval to revoke.
    pub async fn revoke_approval(
        &self,
        op: OpRef<'_>,
        principal: &str,
        who: &str,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        Ok(client
            .query_one(
                "SELECT fleet_approval_revoke($1, $2, $3, $4)",
                &[&op.operation_id, &op.tenant_id, &principal, &who],
            )
            .await?
            .get::<_, Option<bool>>(0)
            .unwrap_or(false))
    }
}

/// What execute reads of the mandate that approved an operation, to verify its signature
/// before the call: the statement as signed, who signed it with which key and signature,
/// when it was stored, and the key as registered now.
#[derive(Debug, Clone)]
pub struct MandateEvidence {
    pub mandate_id: String,
    pub statement: Value,
    pub signed_by: String,
    pub signature: Option<Signature>,
    pub created_at: DateTime<Utc>,
    pub key: Option<fleet_core::signed_quorum::RegisteredKey>,
    /// Who submitted the operation (immutable, like the snapshot).
    pub submitted_by: Option<String>,
}

impl<R: crate::component::ClaimAndCall> StoreAs<R> {
    /// The mandate `mandate_id` of the operation's tenant with its signer's key; `None`
    /// when there is none.
    pub async fn mandate_evidence(
        &self,
        op: OpRef<'_>,
        mandate_id: &str,
    ) -> Result<Option<MandateEvidence>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT m.mandate_id, m.statement, m.signed_by, m.signature, m.created_at,
                        k.key_id, k.principal, k.algorithm, k.public_key, k.rp_id, k.origin,
                        k.registered_at, k.removed_at,
                        (SELECT submitted_by FROM operations
                         WHERE operation_id = $3 AND tenant_id = $2) AS submitted_by
                 FROM mandates m LEFT JOIN approver_keys k ON k.key_id = m.key_id
                 WHERE m.mandate_id = $1 AND m.tenant_id = $2",
                &[&mandate_id, &op.tenant_id, &op.operation_id],
            )
            .await?;
        Ok(row.map(|r| MandateEvidence {
            mandate_id: r.get("mandate_id"),
            statement: r.get("statement"),
            signed_by: r.get("signed_by"),
            signature: Signature::from_bytes(r.get::<_, &[u8]>("signature")),
            created_at: r.get("created_at"),
            key: r
                .get::<_, Option<String>>("key_id")
                .and_then(|_| crate::approver_keys::registered_key(&r)),
            submitted_by: r.get("submitted_by"),
        }))
    }
}

impl<R: crate::component::SweepAndLookUp> StoreAs<R> {
    /// Pending operations an active mandate could approve now, at most `batch`, each
    /// returned at most once per `waited`: the sweeper rings execute for them, which
    /// approves them by the mandate at claim (or leaves them waiting for a person).
    pub async fn take_mandate_due(
        &self,
        batch: i64,
        waited: std::time::Duration,
    ) -> Result<Vec<fleet_core::OpKey>, StoreError> {
        let client = self.client().await?;
        let lim = i32::try_from(batch).unwrap_or(i32::MAX);
        Ok(client
            .query(
                "SELECT operation_id, tenant_id FROM fleet_mandate_due($1, $2)",
                &[&lim, &waited.as_secs_f64()],
            )
            .await?
            .iter()
            .map(|r| fleet_core::OpKey::new(r.get::<_, String>(1), r.get::<_, String>(0)))
            .collect())
    }
}
