//! One intent message, one decision: insert, no-op, or dead-letter with a reason.
//!
//! The intents that arrive while an insert is in flight are written together, by one
//! statement in one transaction (see `fleet_runtime::batch` and
//! `Store::insert_prepared_many`): each still gets its own outcome, and its message is
//! acked only after that commit. A lone intent goes out at once. An intent that
//! supersedes another is written on its own.
//!
//! An intent whose payee's directory gave no answer is parked in the queue's retry queue
//! (`Disposition::Wait`: the consumer's slot is free for the next message at once, and the
//! parked copy is persistent, so a restart loses nothing) and looked at again after a wait
//! that grows with the time it has waited (`fleet_core::directory_wait`); past the
//! deadline (`PREPARE_PAYEE_LOOKUP_DEADLINE_S`) it is dead-lettered
//! `payee_directory_unreachable`.

use std::time::{Duration, SystemTime};

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::directory_wait::{directory_wait, DirectoryWait, DEFAULT_DEADLINE};
use fleet_core::trace_context::TraceParent;
use fleet_core::{IntakeRefusal, ValidIntent};
use fleet_runtime::{trace, Batcher};
use fleet_store::{settle_batch, PrepareOutcome, PrepareStore, Requirement, StoreError};
use tracing::{warn, Instrument};

use crate::submitter::{submitter, AnonymousIntents};
use fleet_intake::checked::{counted, Refusal};
use fleet_intake::intake::{
    against_world_in_force, judged, store_intent_by, unless_prepared_before, validate,
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
    /// How long an intent waits for a payee directory that gives no answer.
    lookup_deadline: Duration,
    inserts: Batcher<Submitted, Stored>,
}

impl PrepareHandler {
    /// Builds the handler and spawns its batching task: call it inside a Tokio runtime.
    pub fn new(
        store: PrepareStore,
        rules: IntakeRules,
        anonymous: AnonymousIntents,
        lookup_deadline: Duration,
    ) -> Self {
        let batch_store = store.clone();
        let inserts = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |batch: Vec<Submitted>| {
            let store = batch_store.clone();
            async move { insert_batch(&store, &batch).await }
        });
        Self {
            store,
            rules,
            anonymous,
            lookup_deadline,
            inserts,
        }
    }

    /// The intake of one message from `sender` (the broker-validated publisher).
    async fn intake(&self, bytes: &[u8], sender: Option<&str>, trace: TraceParent) -> Intake {
        let checked = match validate(bytes, &self.rules) {
            Ok(checked) => checked.traced(trace),
            Err(refusal) => return Intake::Refused(refusal),
        };
        trace::record_operation(checked.intent.operation_id.as_str());
        // Who sent it and the policy in force for it: one statement.
        let snapshot = &checked.intent.snapshot;
        let read = self
            .store
            .queue_intake(sender, &snapshot.tenant_id, checked.intent.action)
            .await;
        let (in_force, principal) = match read {
            Ok(read) => read,
            Err(e) => return Intake::Unavailable(e),
        };
        let by = match submitter(principal, sender, &checked, self.anonymous) {
            Ok(principal) => principal.map(|p| p.name),
            Err(refusal) => {
                return unless_prepared_before(&self.store, &checked.intent, refusal).await
            }
        };
        let world = against_world_in_force(checked, &self.rules, &self.store, in_force.as_deref());
        let checked = match world.await {
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

/// What the queue does with a message, given what happened to its intent, on its first
/// delivery under the default deadline.
pub fn disposition(intake: &Intake) -> Disposition {
    disposition_after(intake, Duration::ZERO, DEFAULT_DEADLINE)
}

/// What the queue does with a message, given what happened to its intent, once it has
/// waited `waited` for the payee's directory, under `deadline`.
pub fn disposition_after(intake: &Intake, waited: Duration, deadline: Duration) -> Disposition {
    match intake {
        Intake::Prepared(_) | Intake::AlreadyPrepared(_) => Disposition::Ack,
        Intake::Refused(refusal) => Disposition::dead_letter(refusal.reason),
        Intake::Unavailable(_) => Disposition::Retry,
        Intake::DirectoryUnreachable => match directory_wait(waited, deadline) {
            DirectoryWait::Park(delay) => Disposition::Wait { delay },
            DirectoryWait::GiveUp => {
                let refusal = IntakeRefusal::PayeeDirectoryUnreachable;
                warn!(
                    waited_s = waited.as_secs(),
                    reason = refusal.as_str(),
                    "intent refused: the payee's directory gave no answer until the deadline"
                );
                Disposition::dead_letter(counted(Refusal::of(refusal, None)).reason)
            }
        },
    }
}

impl Handler for PrepareHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        // The sender's trace when its `traceparent` header is well formed, a new one
        // otherwise; every line logged about the message carries its ids.
        let trace = trace::continue_or_start(delivery.traceparent);
        let intake = self
            .intake(delivery.body, delivery.sender, trace)
            .instrument(trace::message_span(&trace))
            .await;
        // Measured on the parking process's clock; replicas' clocks agree well enough for
        // a deadline of minutes.
        let waited = delivery
            .waiting_since
            .and_then(|since| SystemTime::now().duration_since(since).ok())
            .unwrap_or(Duration::ZERO);
        disposition_after(&intake, waited, self.lookup_deadline)
    }
}
