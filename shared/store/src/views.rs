//! The operation as callers of the HTTP API see it: what the SQL function
//! `operation_view` returns (the outcome events use the same function, so the two never
//! disagree), read into core's [`OperationView`], always scoped to the tenants the caller
//! may act for. A view the type does not describe (a member it does not know, one missing
//! or mistyped) is an error, never passed on as it came.

use chrono::{DateTime, Utc};
use fleet_core::{ApprovalStatus, OpKey, OpRef, OperationId, OperationView, Status, WaitState};
use serde_json::Value;

use crate::component::ReadViews;
use crate::rows::typed_at;
use crate::StoreAs;
use crate::StoreError;

/// Where a page of a listing ends: the next page starts strictly after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageKey {
    pub created_at: DateTime<Utc>,
    pub operation_id: OperationId,
}

/// What a listing keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ViewFilter {
    pub status: Option<Status>,
    pub approval: Option<ApprovalStatus>,
}

/// The function's JSON as core's type; anything else is [`StoreError::Unreadable`].
pub(crate) fn typed_view(json: Value) -> Result<OperationView, StoreError> {
    OperationView::from_json(json)
        .map_err(|e| StoreError::Unreadable(format!("operation_view(o) answered {e}")))
}

const ONE: &str =
    "SELECT operation_view(o) FROM operations o WHERE o.operation_id = $1 AND o.tenant_id = $2";

/// Newest first, `$6` rows at most. Each tenant's rows are read from its own index range
/// (`operations_tenant_created`) up to the page size and the ranges merged, so a page
/// costs the same with ten rows of history or ten million.
fn page_sql(after: bool) -> String {
    // The first page binds no key: its two parameters are still named (and typed) so
    // that both statements take the same arguments.
    let after = if after {
        "AND (o.created_at, o.operation_id) < ($4::timestamptz, $5::text)"
    } else {
        "AND $4::timestamptz IS NULL AND $5::text IS NULL"
    };
    format!(
        "SELECT v.view, v.created_at, v.operation_id
         FROM unnest($1::text[]) AS t(tenant_id)
         CROSS JOIN LATERAL (
             SELECT operation_view(o) AS view, o.created_at, o.operation_id
             FROM operations o
             WHERE o.tenant_id = t.tenant_id
               AND ($2::text IS NULL OR o.status = $2)
               AND ($3::text IS NULL OR o.approval_status = $3)
               {after}
             ORDER BY o.created_at DESC, o.operation_id DESC
             LIMIT $6
         ) v
         ORDER BY v.created_at DESC, v.operation_id DESC
         LIMIT $6"
    )
}

impl<R: ReadViews> StoreAs<R> {
    /// The view of one operation (the caller located it among its tenants first).
    pub async fn operation_view(&self, op: OpRef<'_>) -> Result<Option<OperationView>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(ONE).await?;
        client
            .query_opt(&stmt, &[&op.operation_id, &op.tenant_id])
            .await?
            .map(|r| typed_view(r.try_get(0)?))
            .transpose()
    }

    /// One page of the views of `tenants`' operations, newest first, after `after`.
    pub async fn operation_views(
        &self,
        tenants: &[String],
        filter: ViewFilter,
        after: Option<&PageKey>,
        limit: i64,
    ) -> Result<Vec<(OperationView, PageKey)>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(&page_sql(after.is_some())).await?;
        let rows = client
            .query(
                &stmt,
                &[
                    &tenants,
                    &filter.status.map(Status::as_str),
                    &filter.approval.map(ApprovalStatus::as_str),
                    &after.map(|k| k.created_at),
                    &after.map(|k| k.operation_id.as_str()),
                    &limit,
                ],
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    typed_view(r.try_get(0)?)?,
                    PageKey {
                        created_at: r.get(1),
                        operation_id: typed_at(r, "operation_id", OperationId::parse)?,
                    },
                ))
            })
            .collect()
    }

    /// What decides a wait, for many operations in one statement (by primary key: the ids
    /// find the rows, and the pairs, as the claim writes them, keep each tenant's own).
    pub async fn wait_states(&self, ops: &[OpKey]) -> Result<Vec<(OpKey, WaitState)>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT operation_id, status, approval_status, escalated_at IS NOT NULL, tenant_id
                 FROM operations
                 WHERE operation_id = ANY($1) AND tenant_id || ' ' || operation_id = ANY($2)",
            )
            .await?;
        let ids: Vec<&str> = ops.iter().map(|o| o.operation_id.as_str()).collect();
        let pairs: Vec<String> = ops
            .iter()
            .map(|o| format!("{} {}", o.tenant_id, o.operation_id))
            .collect();
        let rows = client.query(&stmt, &[&ids, &pairs]).await?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let status = Status::parse(r.get(1))?;
                let approval = ApprovalStatus::parse(r.get(2))?;
                Some((
                    OpKey::new(r.get::<_, String>(4), r.get::<_, String>(0)),
                    WaitState {
                        status,
                        approval,
                        escalated: r.get(3),
                    },
                ))
            })
            .collect())
    }
}
