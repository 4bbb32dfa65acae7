//! What risk cues are judged over (`fleet_core::risk`): what a tenant's succeeded payments
//! say about one payee and one bank account, read from the aggregates the database keeps
//! as each payment succeeds (`migrations/0059_payee_aggregates.sql`), by primary key: a
//! constant number of rows whatever the history; and its recent payments to one payee
//! that may still pay (the possible duplicates), answered by the index of
//! `migrations/0057_possible_duplicates.sql`. Read at intake.

use chrono::{DateTime, Utc};
use fleet_core::risk::{PaidBefore, RecentPayment};
use fleet_core::{ApprovalStatus, Status};

use crate::component::StoreIntents;
use crate::StoreAs;
use crate::StoreError;

/// Three primary-key reads in one statement (always one row): the payee's aggregate, its
/// amounts in the payment's currency, the account's aggregate. `$3` NULL (no account
/// known) matches no account. Public for the test that holds it to a constant number of
/// pages read.
pub const PAID_BEFORE: &str = "
SELECT p.payments AS payments_to_payee, p.last_account_fingerprint,
       c.payments AS payments_to_account, a.latest_amounts
FROM (VALUES (1)) AS one
LEFT JOIN paid_payees p ON p.tenant_id = $1 AND p.beneficiary_id = $2
LEFT JOIN paid_accounts c ON c.tenant_id = $1 AND c.account_fingerprint = $3
LEFT JOIN paid_payee_amounts a ON a.tenant_id = $1 AND a.beneficiary_id = $2 AND a.currency = $4";

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
    /// What `tenant`'s succeeded payments say about `beneficiary_id`, the account
    /// `fingerprint` and the payee's amounts in `currency`.
    pub async fn paid_before(
        &self,
        tenant: &str,
        beneficiary_id: &str,
        fingerprint: Option<&str>,
        currency: &str,
    ) -> Result<PaidBefore, StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(PAID_BEFORE).await?;
        let row = client
            .query_one(&read, &[&tenant, &beneficiary_id, &fingerprint, &currency])
            .await?;
        let count = |column: &str| {
            row.get::<_, Option<i64>>(column)
                .map_or(0, |n| u64::try_from(n).unwrap_or(0))
        };
        Ok(PaidBefore {
            payments_to_payee: count("payments_to_payee"),
            last_account: row.get("last_account_fingerprint"),
            payments_to_account: count("payments_to_account"),
            latest_amounts: row
                .get::<_, Option<Vec<i64>>>("latest_amounts")
                .unwrap_or_default(),
        })
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
