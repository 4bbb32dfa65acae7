//! The intake of one intent.v1, whichever way it came (the `intents.prepare` queue or the
//! HTTP API): [`validate`] (the contract, then the capability guard) and [`write`] (the
//! immutable snapshot, idempotent by operation id). Both intakes call these two functions,
//! so an intent is accepted, refused or found conflicting the same way, writes the same
//! row and is counted and logged the same way. Nothing here rings a doorbell: a prepared
//! operation waits for a person's approval, and approving rings execute.

use fleet_core::{parse_intent, IntentError, ValidIntent};
use fleet_runtime::metric_names as m;
use fleet_store::{PrepareOutcome, Store, StoreError};
use tracing::{info, warn};

use crate::guard::{self, ProviderCapabilities};

/// Why an intent was refused: `reason` is the bounded code (the dead-letter reason, and
/// the HTTP API's error code); `field` names the offending field when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: &'static str,
    pub field: Option<String>,
}

/// What [`write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Inserted,
    /// The same snapshot was prepared before: nothing to do.
    AlreadyPrepared,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The operation id names another snapshot; the stored one is untouched.
    #[error("operation_id_conflict")]
    Conflict,
    /// The intent may not replace the operation it supersedes; nothing was written.
    #[error("{}", .0.reason)]
    Refused(Refusal),
    /// Postgres failed; nothing was decided, so the caller may try again.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn counted(reason: &'static str, field: Option<String>) -> Refusal {
    metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => reason).increment(1);
    Refusal { reason, field }
}

/// Parses and validates raw bytes as prepare does; a refusal is logged and counted here.
pub fn validate(body: &[u8], providers: &ProviderCapabilities) -> Result<ValidIntent, Refusal> {
    let intent = parse_intent(body).map_err(|e| {
        // The detail can quote payload values (serde names the value it choked on), so
        // only the code and the field name reach the log.
        let field = match &e {
            IntentError::InvalidField { field, .. } => Some(field.clone()),
            _ => None,
        };
        warn!(
            reason = e.code(),
            field = field.as_deref(),
            "intent refused"
        );
        counted(e.code(), field)
    })?;
    if let Err(reason) = guard::check(intent.action, &intent.snapshot.provider, providers) {
        warn!(operation_id = intent.operation_id.as_str(), action = intent.action.wire_name(), provider = %intent.snapshot.provider, reason, "intent refused");
        return Err(counted(reason, Some("provider".to_owned())));
    }
    Ok(intent)
}

/// Writes a validated intent; `submitted_by` is the authenticated principal, if the
/// intake has one.
pub async fn write(
    store: &Store,
    intent: &ValidIntent,
    submitted_by: Option<&str>,
) -> Result<Written, WriteError> {
    let op = intent.operation_id.as_str();
    let supersedes = intent.supersedes.as_ref().map(|o| o.as_str());
    match store.insert_prepared(intent, submitted_by).await? {
        PrepareOutcome::Inserted => {
            info!(operation_id = op, action = intent.action.wire_name(), payload_hash = %intent.payload_hash, supersedes, submitted_by, "prepared, approval pending");
            metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => "prepared").increment(1);
            if intent.supersedes.is_some() {
                metrics::counter!(m::APPROVALS_RENEWED_TOTAL, "action" => intent.action.wire_name()).increment(1);
            }
            Ok(Written::Inserted)
        }
        PrepareOutcome::AlreadyPrepared => {
            info!(
                operation_id = op,
                "same snapshot prepared before; nothing to do"
            );
            metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => "duplicate").increment(1);
            Ok(Written::AlreadyPrepared)
        }
        PrepareOutcome::Refused(reason) => {
            warn!(
                operation_id = op,
                supersedes, reason, "intent refused: it cannot replace that operation"
            );
            Err(WriteError::Refused(counted(
                reason,
                Some("supersedes".to_owned()),
            )))
        }
        PrepareOutcome::Conflict { stored_hash } => {
            warn!(operation_id = op, payload_hash = %intent.payload_hash, stored_hash = %stored_hash, reason = "operation_id_conflict", "intent refused: the id names another snapshot");
            counted("operation_id_conflict", None);
            Err(WriteError::Conflict)
        }
    }
}
