//! The one way an intent becomes a pending-approval operation, whoever carried it (the
//! `intents.prepare` consumer, or any other intake): validate, check the provider can
//! execute it safely, write it, and say what that means for the sender. Logs and the
//! `fleet_intents_prepared_total` counter are written here, once per intent.

use fleet_core::{parse_intent, IntentError, ValidIntent};
use fleet_runtime::metric_names as m;
use fleet_store::{PrepareOutcome, Store, StoreError};
use tracing::{info, warn};

use crate::guard::{self, ProviderCapabilities};

/// The fate of one intent.
#[derive(Debug)]
pub enum Intake {
    /// Stored now, approval pending.
    Prepared(ValidIntent),
    /// The same snapshot was stored before (a redelivery or a resend): nothing to do.
    AlreadyPrepared(ValidIntent),
    /// Refused for good: the same message is refused every time. Nothing was written.
    Refused(Refusal),
    /// Postgres failed in a way that says nothing about the intent (down, overloaded,
    /// a lock or serialisation conflict): the same message may succeed later.
    Unavailable(StoreError),
}

/// Why an intent was refused, as a sender can be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// A bounded code: the dead-letter reason (see docs/protocol.md).
    pub reason: &'static str,
    /// The member the refusal is about (`payload.amount_minor`), when there is one.
    pub field: Option<String>,
}

impl Refusal {
    fn new(reason: &'static str, field: Option<&str>) -> Self {
        Refusal {
            reason,
            field: field.map(str::to_owned),
        }
    }
}

/// Validates `bytes` as an intent.v1 message and, if it passes, stores it.
pub async fn intake(store: &Store, providers: &ProviderCapabilities, bytes: &[u8]) -> Intake {
    let intent = match parse_intent(bytes) {
        Ok(intent) => intent,
        Err(e) => return refused(refusal_of(&e)),
    };
    if let Err(reason) = guard::check(intent.action, &intent.snapshot.provider, providers) {
        warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), provider = %intent.snapshot.provider, reason, "intent refused");
        return refused(Refusal::new(reason, Some("provider")));
    }
    store_intent(store, intent).await
}

/// Writes an intent that passed validation, mapping every store answer to its meaning.
/// Postgres refusing the values (a gap in validation) is a refusal, never a retry.
pub async fn store_intent(store: &Store, intent: ValidIntent) -> Intake {
    let op = &intent.operation_id;
    match store.insert_prepared(&intent).await {
        Ok(PrepareOutcome::Inserted) => {
            info!(operation_id = %op, action = intent.action.wire_name(), payload_hash = %intent.payload_hash, supersedes = intent.supersedes.as_ref().map(|o| o.as_str()), "prepared, approval pending");
            count("prepared");
            if intent.supersedes.is_some() {
                metrics::counter!(m::APPROVALS_RENEWED_TOTAL, "action" => intent.action.wire_name()).increment(1);
            }
            Intake::Prepared(intent)
        }
        Ok(PrepareOutcome::AlreadyPrepared) => {
            info!(operation_id = %op, "same snapshot prepared before; nothing to do");
            count("duplicate");
            Intake::AlreadyPrepared(intent)
        }
        Ok(PrepareOutcome::Refused(reason)) => {
            warn!(operation_id = %op, supersedes = intent.supersedes.as_ref().map(|o| o.as_str()), reason, "intent refused: it cannot replace that operation");
            refused(Refusal::new(reason, Some("supersedes")))
        }
        Ok(PrepareOutcome::Conflict { stored_hash }) => {
            warn!(operation_id = %op, payload_hash = %intent.payload_hash, stored_hash = %stored_hash, reason = "operation_id_conflict", "intent refused: the id names another snapshot");
            refused(Refusal::new("operation_id_conflict", Some("operation_id")))
        }
        Err(e) if e.refuses_content() => {
            // The SQLSTATE says which rule; the server's message is not logged, since it
            // can quote the offending value.
            warn!(operation_id = %op, sqlstate = e.sqlstate().unwrap_or(""), reason = "database_refused", "intent refused: Postgres cannot store its values");
            refused(Refusal::new("database_refused", None))
        }
        Err(e) => {
            warn!(operation_id = %op, error = %e, "could not store the intent; it will be tried again");
            Intake::Unavailable(e)
        }
    }
}

fn refusal_of(e: &IntentError) -> Refusal {
    // The detail can quote payload values (serde names the value it choked on), so only
    // the code and the field name leave this function.
    let field = match e {
        IntentError::InvalidField { field, .. } => Some(field.as_str()),
        IntentError::Ambiguous { at, .. } => Some(at.as_str()),
        IntentError::Oversized(_)
        | IntentError::Malformed(_)
        | IntentError::UnsupportedSchema(_)
        | IntentError::UnknownAction(_) => None,
    };
    let refusal = Refusal::new(e.code(), field);
    warn!(
        reason = refusal.reason,
        field = refusal.field.as_deref(),
        "intent refused"
    );
    refusal
}

fn refused(refusal: Refusal) -> Intake {
    count(refusal.reason);
    Intake::Refused(refusal)
}

fn count(outcome: &'static str) {
    metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => outcome).increment(1);
}
