//! Whose a provider's object is, by the fleet's own records: the tenants of the succeeded
//! operations that made or acted on it (their `external_id`). Read at intake for each
//! object an intent names (`fleet_core::objects`), and by the approval page. Answered by
//! the index `operations_external_id` (provider, external_id) of
//! `migrations/0001_operations.sql`.

use crate::component::ReadOperations;
use crate::StoreAs;
use crate::StoreError;

const READ: &str = "
SELECT DISTINCT tenant_id FROM operations
WHERE provider = $1 AND external_id = $2 AND status = 'succeeded' AND action = ANY($3)
ORDER BY tenant_id";

impl<R: ReadOperations> StoreAs<R> {
    /// The tenants for which an operation of one of `actions` at `provider` succeeded
    /// with `external_id`, each once (none: the fleet has no record of the object).
    pub async fn object_tenants(
        &self,
        provider: &str,
        external_id: &str,
        actions: &[&str],
    ) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(READ).await?;
        let rows = client
            .query(&read, &[&provider, &external_id, &actions])
            .await?;
        Ok(rows.iter().map(|r| r.get("tenant_id")).collect())
    }
}
