//! One intent message, one decision: insert, no-op, or dead-letter with a reason.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_store::Store;
use tracing::warn;

use crate::guard::ProviderCapabilities;
use crate::intake::{self, WriteError};

pub struct PrepareHandler {
    store: Store,
    providers: ProviderCapabilities,
}

impl PrepareHandler {
    pub fn new(store: Store, providers: ProviderCapabilities) -> Self {
        Self { store, providers }
    }
}

fn dead_letter(reason: &'static str) -> Disposition {
    Disposition::DeadLetter {
        reason: reason.to_owned(),
    }
}

impl Handler for PrepareHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        let intent = match intake::validate(delivery.body, &self.providers) {
            Ok(intent) => intent,
            Err(refusal) => return dead_letter(refusal.reason),
        };
        // The queue carries no authenticated principal.
        match intake::write(&self.store, &intent, None).await {
            Ok(_) => Disposition::Ack,
            Err(WriteError::Conflict) => dead_letter("operation_id_conflict"),
            Err(WriteError::Refused(refusal)) => dead_letter(refusal.reason),
            Err(WriteError::Store(e)) => {
                warn!(operation_id = intent.operation_id.as_str(), error = %e, "could not store the intent; will retry");
                Disposition::Retry
            }
        }
    }
}
