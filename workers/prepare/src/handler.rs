//! One intent message, one decision: insert, no-op, or dead-letter with a reason.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::{parse_intent, IntentError};
use fleet_runtime::metric_names as m;
use fleet_store::{PrepareOutcome, Store};
use tracing::{info, warn};

use crate::guard::{self, ProviderCapabilities};

pub struct PrepareHandler {
    store: Store,
    providers: ProviderCapabilities,
}

impl PrepareHandler {
    pub fn new(store: Store, providers: ProviderCapabilities) -> Self {
        Self { store, providers }
    }
}

fn refuse(reason: &'static str) -> Disposition {
    metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => reason).increment(1);
    Disposition::DeadLetter { reason: reason.to_owned() }
}

fn log_refusal(e: &IntentError) {
    // The detail can quote payload values (serde names the value it choked on), so only
    // the code and the field name reach the log.
    match e {
        IntentError::InvalidField { field, .. } => warn!(reason = e.code(), field = %field, "intent refused"),
        _ => warn!(reason = e.code(), "intent refused"),
    }
}

impl Handler for PrepareHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        let intent = match parse_intent(delivery.body) {
            Ok(intent) => intent,
            Err(e) => {
                log_refusal(&e);
                return refuse(e.code());
            }
        };
        let op = intent.operation_id.as_str();
        if let Err(reason) = guard::check(intent.action, &intent.snapshot.provider, intent.approval_ttl_seconds, &self.providers) {
            warn!(operation_id = op, action = intent.action.wire_name(), provider = %intent.snapshot.provider, reason, "intent refused");
            return refuse(reason);
        }
        match self.store.insert_prepared(&intent).await {
            Ok(PrepareOutcome::Inserted) => {
                info!(operation_id = op, action = intent.action.wire_name(), payload_hash = %intent.payload_hash, supersedes = intent.supersedes.as_ref().map(|o| o.as_str()), "prepared, approval pending");
                metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => "prepared").increment(1);
                if intent.supersedes.is_some() {
                    metrics::counter!(m::APPROVALS_RENEWED_TOTAL, "action" => intent.action.wire_name()).increment(1);
                }
                Disposition::Ack
            }
            Ok(PrepareOutcome::Refused(reason)) => {
                warn!(operation_id = op, supersedes = intent.supersedes.as_ref().map(|o| o.as_str()), reason, "intent refused: it cannot replace that operation");
                refuse(reason)
            }
            Ok(PrepareOutcome::AlreadyPrepared) => {
                info!(operation_id = op, "same snapshot prepared before; nothing to do");
                metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => "duplicate").increment(1);
                Disposition::Ack
            }
            Ok(PrepareOutcome::Conflict { stored_hash }) => {
                warn!(operation_id = op, payload_hash = %intent.payload_hash, stored_hash = %stored_hash, reason = "operation_id_conflict", "intent refused: the id names another snapshot");
                refuse("operation_id_conflict")
            }
            Err(e) => {
                warn!(operation_id = op, error = %e, "could not store the intent; will retry");
                Disposition::Retry
            }
        }
    }
}
