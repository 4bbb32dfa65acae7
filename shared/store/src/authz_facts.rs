//! What the authorization rules (`fleet_core::authz`) need to know about an operation
//! before anyone acts on it: its tenant and who submitted it. Both are immutable once the
//! operation is stored, so the answer cannot go stale between this read and the decision.

use fleet_core::OperationFacts;

use crate::{Store, StoreError};

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

impl Store {
    /// The facts of an operation, if it exists (whatever its tenant: the rules decide).
    pub async fn operation_facts(
        &self,
        operation_id: &str,
    ) -> Result<Option<StoredFacts>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT tenant_id, submitted_by FROM operations WHERE operation_id = $1",
            )
            .await?;
        Ok(client
            .query_opt(&stmt, &[&operation_id])
            .await?
            .map(|r| StoredFacts {
                tenant_id: r.get(0),
                submitted_by: r.get(1),
            }))
    }
}
