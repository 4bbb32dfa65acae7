//! The reconcile doorbell: reconcile the operation it names now.

use std::sync::Arc;

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::{Doorbell, OpRef};
use tracing::warn;

use crate::reconciler::Reconciler;

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
        let rung = match Doorbell::parse(delivery.body) {
            Ok(rung) => rung,
            Err(reason) => {
                warn!(reason, "reconcile doorbell refused");
                return Disposition::DeadLetter {
                    reason: reason.to_owned(),
                };
            }
        };
        let id = rung.operation_id.as_str();
        let reconciled = match &rung.tenant_id {
            Some(tenant) => self.reconciler.reconcile(OpRef::new(tenant, id)).await,
            // A bell from before bells named the tenant (or `fleetctl reconcile` of an id
            // alone): every row with the id is looked at; one with nothing to settle stays
            // as it is.
            None => match self.reconciler.store.tenants_of(id).await {
                Ok(tenants) => {
                    let mut reconciled = Ok(());
                    for tenant in &tenants {
                        reconciled =
                            reconciled.and(self.reconciler.reconcile(OpRef::new(tenant, id)).await);
                    }
                    reconciled
                }
                Err(e) => Err(e),
            },
        };
        match reconciled {
            Ok(()) => Disposition::Ack,
            Err(e) => {
                warn!(operation_id = id, error = %e, "store unavailable; the doorbell will be redelivered");
                Disposition::Retry
            }
        }
    }
}
