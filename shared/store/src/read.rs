//! Reads for operators and workers: one operation, its attempts and events, lists.

use fleet_core::Status;

use crate::rows::OPERATION_COLUMNS;
use crate::{AttemptRow, EventRow, OperationRow, Store, StoreError};

impl Store {
    pub async fn get(&self, operation_id: &str) -> Result<Option<OperationRow>, StoreError> {
        let client = self.client().await?;
        let sql = format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE operation_id = $1");
        let stmt = client.prepare_cached(&sql).await?;
        Ok(client.query_opt(&stmt, &[&operation_id]).await?.as_ref().map(OperationRow::from_row))
    }

    /// Newest first, at most `limit` rows.
    pub async fn list(&self, status: Option<Status>, escalated_only: bool, limit: i64) -> Result<Vec<OperationRow>, StoreError> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT {OPERATION_COLUMNS} FROM operations
             WHERE ($1::text IS NULL OR status = $1) AND (NOT $2 OR escalated_at IS NOT NULL)
             ORDER BY created_at DESC, operation_id DESC LIMIT $3"
        );
        let rows = client.query(&sql, &[&status.map(Status::as_str), &escalated_only, &limit]).await?;
        Ok(rows.iter().map(OperationRow::from_row).collect())
    }

    pub async fn attempts(&self, operation_id: &str) -> Result<Vec<AttemptRow>, StoreError> {
        let client = self.client().await?;
        let rows = client.query("SELECT * FROM attempts WHERE operation_id = $1 ORDER BY fence", &[&operation_id]).await?;
        Ok(rows.iter().map(AttemptRow::from_row).collect())
    }

    pub async fn events(&self, operation_id: &str) -> Result<Vec<EventRow>, StoreError> {
        let client = self.client().await?;
        let rows = client.query("SELECT * FROM operation_events WHERE operation_id = $1 ORDER BY id", &[&operation_id]).await?;
        Ok(rows.iter().map(EventRow::from_row).collect())
    }

    /// Counts by status, for summaries and fleet-wide gauges.
    pub async fn count_by_status(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let client = self.client().await?;
        let rows = client.query("SELECT status, count(*) FROM operations GROUP BY status ORDER BY status", &[]).await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
