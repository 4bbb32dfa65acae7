//! The reconcile doorbell. This release reads the row and reports what needs settling;
//! it changes nothing yet (lookups and resolution are the next step), so an `unknown`
//! row stays `unknown` and visible to operators.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::Doorbell;
use fleet_store::Store;
use tracing::{info, warn};

pub struct ReconcileHandler {
    store: Store,
}

impl ReconcileHandler {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

impl Handler for ReconcileHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        let op = match Doorbell::parse(delivery.body) {
            Ok(op) => op,
            Err(reason) => {
                warn!(reason, "reconcile doorbell refused");
                return Disposition::DeadLetter { reason: reason.to_owned() };
            }
        };
        match self.store.get(op.as_str()).await {
            Ok(Some(row)) => {
                info!(operation_id = %op, status = %row.status, reason = row.status_reason.as_deref().unwrap_or(""), "needs reconciliation; waiting for an operator");
                Disposition::Ack
            }
            Ok(None) => Disposition::Ack,
            Err(e) => {
                warn!(operation_id = %op, error = %e, "store unavailable; the doorbell will be redelivered");
                Disposition::Retry
            }
        }
    }
}
