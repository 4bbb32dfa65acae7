//! Whose operation an event is about, read before it is ingested: the consumer lets a
//! Stripe event move an operation only when it comes from the account that operation's
//! tenant acts in (`fleet_core::stripe::accounts`), and a tenant never changes, so the
//! read needs no lock. Linked as [`super::apply`] links: by the reference the event echoes
//! (the operation's key), else by the provider's object id when exactly one operation
//! recorded it.

use super::WebhookEvent;
use crate::component::IngestWebhooks;
use crate::{StoreAs, StoreError};

const BY_REFERENCE: &str = "SELECT tenant_id FROM operations WHERE idempotency_key = $1";

const BY_OBJECT: &str = "SELECT tenant_id FROM operations WHERE provider = $1 AND external_id = $2
     ORDER BY operation_id LIMIT 2";

impl<R: IngestWebhooks> StoreAs<R> {
    /// The tenant of the operation `ev` would be linked to; `None`: no one operation.
    pub async fn tenant_of_webhook(&self, ev: &WebhookEvent) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        if let Some(reference) = &ev.object.reference {
            if let Some(row) = client.query_opt(BY_REFERENCE, &[reference]).await? {
                return Ok(Some(row.get(0)));
            }
        }
        let Some(object_id) = &ev.object.id else {
            return Ok(None);
        };
        let rows = client
            .query(BY_OBJECT, &[&ev.provider.as_str(), object_id])
            .await?;
        Ok(match rows.as_slice() {
            [one] => Some(one.get(0)),
            _ => None,
        })
    }
}
