//! The history risk cues are judged over (`fleet_core::risk`): a tenant's succeeded
//! payments to one payee, and to one bank account, oldest first. Read at intake; both
//! reads are answered by the partial indexes of `migrations/0049_risk_cues.sql`.

use fleet_core::risk::PastPayment;

use crate::component::StoreIntents;
use crate::StoreAs;
use crate::StoreError;

const READ: &str = "
SELECT payload ->> 'beneficiary_id' AS beneficiary_id, (payload ->> 'amount_minor')::bigint AS amount_minor,
       payload ->> 'currency' AS currency, payee #>> '{account,fingerprint}' AS fingerprint
FROM operations
WHERE action = 'payment.create' AND status = 'succeeded' AND tenant_id = $1
  AND ((payload ->> 'beneficiary_id') = $2 OR (payee #>> '{account,fingerprint}') = $3)
ORDER BY created_at, operation_id
LIMIT 1000";

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
}
