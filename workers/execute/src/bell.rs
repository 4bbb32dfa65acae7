//! Ringing reconcile for an operation this worker left to it.

use fleet_broker::{Publisher, Queue};
use fleet_core::OpRef;
use tracing::warn;

/// Best effort: if the bell cannot be rung, reconcile's sweeper finds the row anyway.
pub(crate) async fn ring_reconcile(publisher: &Publisher, op: OpRef<'_>) {
    if let Err(e) = publisher.ring(Queue::OperationsReconcile, op).await {
        warn!(operation_id = op.operation_id, tenant_id = op.tenant_id, error = %e, "could not ring reconcile; the sweeper will pick the row up");
    }
}
