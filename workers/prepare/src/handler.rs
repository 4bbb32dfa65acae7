//! One intent message, one decision: insert, no-op, or dead-letter with a reason.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_store::Store;

use crate::intake::{intake, Intake, IntakeRules};

pub struct PrepareHandler {
    store: Store,
    rules: IntakeRules,
}

impl PrepareHandler {
    pub fn new(store: Store, rules: IntakeRules) -> Self {
        Self { store, rules }
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
        disposition(&intake(&self.store, &self.rules, delivery.body).await)
    }
}
