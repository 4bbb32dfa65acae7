//! The reconcile doorbell: reconcile the operation it names now.

use std::sync::Arc;

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::Doorbell;
use tracing::warn;

use crate::Reconciler;

pub struct ReconcileHandler {
    reconciler: Arc<Reconciler>,
}

impl ReconcileHandler {
    pub fn new(reconciler: Arc<Reconciler>) -> Self {
        Self { reconciler }
    }
}

impl Handler for ReconcileHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        let op = match Doorbell::parse(delivery.body) {
            Ok(op) => op,
            Err(reason) => {
                warn!(reason, "reconcile doorbell refused");
                return Disposition::DeadLetter {
                    reason: reason.to_owned(),
                };
            }
        };
        match self.reconciler.reconcile(op.as_str()).await {
            Ok(()) => Disposition::Ack,
            Err(e) => {
                warn!(operation_id = %op, error = %e, "store unavailable; the doorbell will be redelivered");
                Disposition::Retry
            }
        }
    }
}
