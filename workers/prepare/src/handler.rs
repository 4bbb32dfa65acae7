//! One intent message, one decision: insert, no-op, or dead-letter with a reason.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_store::Store;

use crate::guard::ProviderCapabilities;
use crate::intake::{intake, Intake};

pub struct PrepareHandler {
    store: Store,
    providers: ProviderCapabilities,
}

impl PrepareHandler {
    pub fn new(store: Store, providers: ProviderCapabilities) -> Self {
        Self { store, providers }
    }
}

/// What the queue does with a message, given what happened to its intent.
pub fn disposition(intake: &Intake) -> Disposition {
    match intake {
        Intake::Prepared(_) | Intake::AlreadyPrepared(_) => Disposition::Ack,
        Intake::Refused(refusal) => Disposition::dead_letter(refusal.reason),
        Intake::Unavailable(_) => Disposition::Retry,
    }
}

impl Handler for PrepareHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        disposition(&intake(&self.store, &self.providers, delivery.body).await)
    }
}
