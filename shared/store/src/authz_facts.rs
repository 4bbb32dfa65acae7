//! What the authorization rules (`fleet_core::authz`) need to know about an operation
//! before anyone acts on it: its tenant and who submitted it. Both are immutable once the
//! operation is stored, so the answer cannot go stale between this read and the decision.

use fleet_core::OperationFacts;

use crate::component::ReadOperations;
use crate::StoreAs;
use crate::StoreError;

/// [`OperationFacts`], owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFacts {
    pub tenant_id: String,
    pub submitted_by: Option<String>,
}

impl StoredFacts {
    pub fn facts(&self) -> OperationFacts<'_> {
        OperationFacts {
            tenant_id: &self.tenant_id,
            submitted_by: self.submitted_by.as_deref(),
        }
    }
}

impl<R: ReadOperations> StoreAs<R> {
    /// The facts of every operation with this id among `tenants` (ids are unique per
    /// tenant only, docs/design.md#tenant-boundaries), in tenant order. Another tenant's
    /// operation is not even read: `fleet_core::authz::locate` then finds it missing,
    /// exactly as a free id.
    pub async fn operation_facts(
        &self,
        operation_id: &str,
        tenants: &[String],
    ) -> Result<Vec<StoredFacts>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT tenant_id, submitted_by FROM operations
                 WHERE operation_id = $1 AND tenant_id = ANY($2) ORDER BY tenant_id",
            )
            .await?;
        Ok(client
            .query(&stmt, &[&operation_id, &tenants])
            .await?
            .iter()
            .map(|r| StoredFacts {
                tenant_id: r.get(0),
                submitted_by: r.get(1),
            })
            .collect())
    }
}
