//! One intent message, one decision: insert, no-op, or dead-letter with a reason.
//!
//! The intents that arrive while an insert is in flight are written together, in one
//! transaction (see `fleet_runtime::batch`): each still gets its own statement and its
//! own outcome, and its message is acked only after that commit. A lone intent goes out
//! at once. An intent that supersedes another is written on its own.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::ValidIntent;
use fleet_runtime::Batcher;
use fleet_store::{settle_batch, PrepareOutcome, PrepareStore, Requirement, StoreError};

use crate::submitter::{submitter, AnonymousIntents};
use fleet_intake::intake::{
    against_world, judged, store_intent_by, unless_prepared_before, validate,
};
use fleet_intake::{CheckedIntent, Intake, IntakeRules};

/// Most intents one transaction writes.
const MAX_BATCH: usize = 64;
/// Insert transactions in flight at once.
const IN_FLIGHT: usize = 2;

type Stored = Result<PrepareOutcome, StoreError>;

/// An intent to insert, with the principal that submitted it (if the door knows).
type Submitted = (CheckedIntent, Option<String>);

pub struct PrepareHandler {
    store: PrepareStore,
    rules: IntakeRules,
    anonymous: AnonymousIntents,
    inserts: Batcher<Submitted, Stored>,
}

impl PrepareHandler {
    /// Builds the handler and spawns its batching task: call it inside a Tokio runtime.
    pub fn new(store: PrepareStore, rules: IntakeRules, anonymous: AnonymousIntents) -> Self {
        let batch_store = store.clone();
        let inserts = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |batch: Vec<Submitted>| {
            let store = batch_store.clone();
            async move { insert_batch(&store, &batch).await }
        });
        Self {
            store,
            rules,
            anonymous,
            inserts,
        }
    }

    /// The intake of one message from `sender` (the broker-validated publisher).
    async fn intake(&self, bytes: &[u8], sender: Option<&str>) -> Intake {
        let checked = match validate(bytes, &self.rules) {
            Ok(checked) => checked,
            Err(refusal) => return Intake::Refused(refusal),
        };
        let by = match submitter(&self.store, sender, &checked, self.anonymous).await {
            Ok(principal) => principal.map(|p| p.name),
            Err(Intake::Refused(refusal)) => {
                return unless_prepared_before(&self.store, &checked.intent, refusal).await
            }
            Err(fate) => return fate,
        };
        let checked = match against_world(checked, &self.rules, &self.store).await {
            Ok(checked) => checked,
            Err(fate) => return fate,
        };
        if checked.intent.supersedes.is_some() {
            return store_intent_by(&self.store, checked, by.as_deref()).await;
        }
        let stored = self.inserts.submit((checked.clone(), by.clone())).await;
        let stored = stored.unwrap_or_else(|| {
            Err(StoreError::Batched(
                "the intent's batch ended without a result".into(),
            ))
        });
        judged(checked, by.as_deref(), stored)
    }
}

async fn insert_batch(store: &PrepareStore, batch: &[Submitted]) -> Vec<Stored> {
    let items: Vec<(&ValidIntent, Requirement, Option<&str>)> = batch
        .iter()
        .map(|(c, by)| (&c.intent, c.requirement(), by.as_deref()))
        .collect();
    let stored = store.insert_prepared_many(&items).await;
    settle_batch(stored, &items, |(intent, required, by)| {
        store.insert_prepared(intent, required.clone(), *by)
    })
    .await
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
        disposition(&self.intake(delivery.body, delivery.sender).await)
    }
}
