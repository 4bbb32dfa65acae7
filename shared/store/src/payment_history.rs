//! The history risk cues are judged over (`fleet_core::risk`): a tenant's succeeded
//! payments to one payee, and to one bank account, oldest first, answered by the partial
//! indexes of `migrations/0049_risk_cues.sql`; and its recent payments to one payee that
//! may still pay (the possible duplicates), answered by the index of
//! `migrations/0057_possible_duplicates.sql`. Read at intake.

use chrono::{DateTime, Utc};
use fleet_core::risk::{PastPayment, RecentPayment};
use fleet_core::{ApprovalStatus, Status};

use crate::component::StoreIntents;
use crate::StoreAs;
use crate::StoreError;

/// The latest thousand, given oldest first.
const READ: &str = "
SELECT * FROM (
  SELECT payload ->> 'beneficiary_id' AS beneficiary_id, (payload ->> 'amount_minor')::bigint AS amount_minor,
         payload ->> 'currency' AS currency, payee #>> '{account,fingerprint}' AS fingerprint,
         created_at, operation_id
  FROM operations
  WHERE action = 'payment.create' AND status = 'succeeded' AND tenant_id = $1
    AND ((payload ->> 'beneficiary_id') = $2 OR (payee #>> '{account,fingerprint}') = $3)
  ORDER BY created_at DESC, operation_id DESC
  LIMIT 1000
) latest
ORDER BY created_at, operation_id";

/// The payments to the payee since `$3` that may still pay or have paid (the rule,
/// `fleet_core::risk::duplicate::may_pay`, judges again). Bounded: a payee paid more
/// than a hundred times a week is judged over the latest hundred. Ordered by `created_at`
/// alone, the order of `operations_recent_payments_to_payee` after its two equalities:
/// the index gives both the rows and their order, so no plan is tempted to walk the
/// fleet-wide `created_at` index and filter, whatever the statistics say.
const RECENT: &str = "
SELECT operation_id, payload ->> 'beneficiary_id' AS beneficiary_id,
       payload ->> 'invoice_id' AS invoice_id, (payload ->> 'amount_minor')::bigint AS amount_minor,
       payload ->> 'currency' AS currency, status, approval_status, created_at
FROM operations
WHERE action = 'payment.create' AND tenant_id = $1 AND (payload ->> 'beneficiary_id') = $2
  AND created_at >= $3
  AND status NOT IN ('failed', 'cancelled') AND approval_status NOT IN ('rejected', 'expired')
ORDER BY created_at DESC
LIMIT 100";

impl<R: StoreIntents> StoreAs<R> {
    /// `tenant`'s succeeded payments to `beneficiary_id` or to the account `fingerprint`,
    /// oldest first (the latest thousand).
    pub async fn payment_history(
        &self,
        tenant: &str,
        beneficiary_id: &str,
        fingerprint: Option<&str>,
    ) -> Result<Vec<PastPayment>, StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(READ).await?;
        let rows = client
            .query(&read, &[&tenant, &beneficiary_id, &fingerprint])
            .await?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(PastPayment {
                    beneficiary_id: r.get::<_, Option<String>>("beneficiary_id")?,
                    amount_minor: r.get::<_, Option<i64>>("amount_minor")?,
                    currency: r.get::<_, Option<String>>("currency")?,
                    account_fingerprint: r.get("fingerprint"),
                })
            })
            .collect())
    }

    /// `tenant`'s payments to `beneficiary_id` made since `since` that may still pay or
    /// have paid, newest first (at most a hundred).
    pub async fn recent_payments(
        &self,
        tenant: &str,
        beneficiary_id: &str,
        since: DateTime<Utc>,
    ) -> Result<Vec<RecentPayment>, StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(RECENT).await?;
        let rows = client
            .query(&read, &[&tenant, &beneficiary_id, &since])
            .await?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(RecentPayment {
                    operation_id: r.get("operation_id"),
                    beneficiary_id: r.get::<_, Option<String>>("beneficiary_id")?,
                    invoice_id: r.get::<_, Option<String>>("invoice_id")?,
                    amount_minor: r.get::<_, Option<i64>>("amount_minor")?,
                    currency: r.get::<_, Option<String>>("currency")?,
                    status: Status::parse(r.get("status"))?,
                    approval: ApprovalStatus::parse(r.get("approval_status"))?,
                    created_at: r.get("created_at"),
                })
            })
            .collect())
    }
}
