//! A call under a standing mandate holds the mandate until its answer, so that its
//! revocation commits after every call it did not stop (migrations/0068).
//!
//! [`StoreAs::hold_mandate`] takes the mandate's shared lock on one pooled connection and
//! keeps that connection, idle, through the send mark and the call; the revocation takes
//! the lock exclusive and waits for it. The send mark is written on the same connection,
//! so a holder never needs a second one. Holders are counted: at most half the pool holds
//! at once, so the other half stays for lease renewals and records, and a burst of calls
//! under one mandate can never take every connection while waiting for one more.

use std::sync::{Arc, OnceLock};

use fleet_core::{OpRef, Status};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use crate::component::ClaimAndCall;
use crate::lost_claims::MARK_SENT;
use crate::{StoreAs, StoreError};

/// A held mandate: let go with [`MandateHold::release`]. Dropped without it (the call's
/// task cancelled), its connection is closed, not returned: the server lets the lock go
/// with the session, and no pooled connection keeps a lock nobody will release.
pub struct MandateHold {
    /// The holding connection (a lock, not a plain mutex, since it is used across awaits;
    /// taken out when the hold is let go).
    client: Mutex<Option<deadpool_postgres::Object>>,
    mandate_id: String,
    _permit: OwnedSemaphorePermit,
}

/// The holders' count, sized once from the pool.
fn holders(pool_size: usize) -> Arc<Semaphore> {
    static HOLDERS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    HOLDERS
        .get_or_init(|| Arc::new(Semaphore::new((pool_size / 2).max(1))))
        .clone()
}

impl<R: ClaimAndCall> StoreAs<R> {
    /// Holds the mandate that approved `op` at claim `fence` while it stands: `None` when
    /// it was revoked (or the claim is no longer live, or no mandate approved it), and
    /// nothing may be sent. May wait for a revocation in progress.
    pub async fn hold_mandate(
        &self,
        op: OpRef<'_>,
        fence: i64,
    ) -> Result<Option<MandateHold>, StoreError> {
        let permit = holders(self.size())
            .acquire_owned()
            .await
            .expect("the holders' semaphore is never closed");
        let client = self.client().await?;
        let held: Option<String> = client
            .query_one(
                "SELECT fleet_mandate_hold($1, $2, $3)",
                &[&op.operation_id, &op.tenant_id, &fence],
            )
            .await?
            .get(0);
        Ok(held.map(|mandate_id| MandateHold {
            client: Mutex::new(Some(client)),
            mandate_id,
            _permit: permit,
        }))
    }
}

impl MandateHold {
    /// The mandate held.
    pub fn mandate_id(&self) -> &str {
        &self.mandate_id
    }

    /// [`StoreAs::mark_request_sent`] on the holding connection.
    pub async fn mark_request_sent(&self, op: OpRef<'_>, fence: i64) -> Result<bool, StoreError> {
        let client = self.client.lock().await;
        let Some(client) = client.as_ref() else {
            // Let go already: nothing may be sent.
            return Ok(false);
        };
        let held = Status::InProgress.as_str();
        Ok(client
            .execute(MARK_SENT, &[&op.operation_id, &op.tenant_id, &fence, &held])
            .await?
            == 1)
    }

    /// Lets the mandate go (after the call's answer, or when no call is made); a mark
    /// asked for afterwards is refused.
    pub async fn release(&self) {
        let Some(client) = self.client.lock().await.take() else {
            return;
        };
        let released = client
            .query_one("SELECT fleet_mandate_unhold($1)", &[&self.mandate_id])
            .await
            .map(|r| r.get::<_, bool>(0));
        if !matches!(released, Ok(true)) {
            // Never hand back a connection that may still hold the lock.
            drop(deadpool_postgres::Object::take(client));
        }
    }
}

impl Drop for MandateHold {
    fn drop(&mut self) {
        if let Some(client) = self.client.get_mut().take() {
            drop(deadpool_postgres::Object::take(client));
        }
    }
}
