//! Approvers' notifications (migrations/0077): the notices the database writes with each
//! `prepared` event of a tenant that has a channel (0088), planned by the notifier into one
//! row per (operation, channel, kind), claimed with a lease, and marked sent, retried or
//! dropped. Every write goes through an owner's function; the relay holds nothing else on
//! these tables.

use serde_json::Value;

use crate::component::NotifyApprovers;
use crate::StoreAs;
use crate::StoreError;

/// One notification claimed for sending.
#[derive(Debug, Clone)]
pub struct ClaimedNotification {
    pub id: i64,
    pub tenant_id: String,
    pub operation_id: String,
    /// The channel's name in the channels file.
    pub channel: String,
    /// `waiting` or `reminder`.
    pub kind: String,
    /// The same for every attempt of this notification (`ntf_` + 32 hex digits).
    pub idempotency_id: String,
    /// The operation's view when it started waiting.
    pub view: Value,
    /// RFC 3339, as the view writes instants.
    pub approval_expires_at: String,
    /// Seconds left to decide, by the database clock.
    pub seconds_left: f64,
    /// Attempts so far, this one included.
    pub attempts: i32,
}

impl<R: NotifyApprovers> StoreAs<R> {
    /// Sets the tenants whose operations get a notice when they start waiting to exactly
    /// `tenants`, those of the channels file (migrations/0088): an operation of any other
    /// tenant writes no notice. Returns how many tenants the list holds.
    pub async fn set_notice_tenants(&self, tenants: &[String]) -> Result<i32, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT fleet_notify_tenants($1)")
            .await?;
        let row = client.query_one(&stmt, &[&tenants]).await?;
        Ok(row.get(0))
    }

    /// Plans up to `limit` unplanned notices into notifications for the channels of each
    /// one's tenant (`channels`: `{"<tenant>": ["<channel>", …]}`), a reminder
    /// `reminder_before_s` before each expiry (0: none). Returns how many it planned.
    pub async fn plan_notifications(
        &self,
        limit: i32,
        channels: &Value,
        reminder_before_s: u64,
    ) -> Result<i32, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT fleet_notify_plan($1, $2, $3)")
            .await?;
        let row = client
            .query_one(&stmt, &[&limit, channels, &(reminder_before_s as f64)])
            .await?;
        Ok(row.get(0))
    }

    /// Claims up to `limit` due notifications for `lease_s` seconds; those whose
    /// operation stopped waiting are dropped by the claim and not returned.
    pub async fn claim_notifications(
        &self,
        limit: i32,
        lease_s: u64,
    ) -> Result<Vec<ClaimedNotification>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT * FROM fleet_notify_claim($1, $2)")
            .await?;
        let rows = client.query(&stmt, &[&limit, &(lease_s as f64)]).await?;
        Ok(rows
            .iter()
            .map(|r| ClaimedNotification {
                id: r.get("id"),
                tenant_id: r.get("tenant_id"),
                operation_id: r.get("operation_id"),
                channel: r.get("channel"),
                kind: r.get("kind"),
                idempotency_id: r.get("idempotency_id"),
                view: r.get("view"),
                approval_expires_at: r.get("approval_expires_at"),
                seconds_left: r.get("seconds_left"),
                attempts: r.get("attempts"),
            })
            .collect())
    }

    /// Marks a notification sent; false if it was already settled.
    pub async fn notification_sent(&self, id: i64) -> Result<bool, StoreError> {
        self.settle("SELECT fleet_notify_sent($1)", &[&id]).await
    }

    /// Leaves a failed notification to be tried again `retry_after_s` from now.
    pub async fn notification_retry(
        &self,
        id: i64,
        retry_after_s: f64,
        error: &str,
    ) -> Result<bool, StoreError> {
        self.settle(
            "SELECT fleet_notify_retry($1, $2, $3)",
            &[&id, &retry_after_s, &error],
        )
        .await
    }

    /// Gives a notification up for good, with the reason.
    pub async fn notification_drop(&self, id: i64, reason: &str) -> Result<bool, StoreError> {
        self.settle("SELECT fleet_notify_drop($1, $2)", &[&id, &reason])
            .await
    }

    async fn settle(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await?;
        let row = client.query_one(&stmt, params).await?;
        Ok(row.get::<_, Option<bool>>(0).unwrap_or(false))
    }
}
