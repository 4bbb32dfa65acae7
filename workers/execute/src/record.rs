//! Recording a claim's answer: the attempt and the row's move, both fenced, in one
//! transaction (shared with the answers recorded at the same time, see `batches.rs`);
//! an answer that leaves the row `unknown` rings reconcile.

use fleet_core::{Outcome, Status};
use fleet_runtime::metric_names as m;
use fleet_store::{AttemptRecord, ClaimedOperation, StoreError, TransitionOutcome};
use tracing::{info, warn};

use crate::answer::Answer;
use crate::batches::Batches;
use crate::bell::ring_reconcile;
use crate::deps::ExecuteDeps;

pub(crate) async fn record(
    deps: &ExecuteDeps,
    batches: &Batches,
    claimed: &ClaimedOperation,
    outcome: &Outcome,
    attempt: AttemptRecord,
    evidence: Option<serde_json::Value>,
) -> Result<(), StoreError> {
    let row = &claimed.row;
    let op = row.operation_id.as_str();
    let answer = Answer {
        op: row.key().to_key(),
        fence: claimed.fence,
        outcome: outcome.clone(),
        attempt,
        evidence,
    };
    match batches.record(answer).await? {
        TransitionOutcome::Moved { to, .. } => {
            info!(operation_id = op, fence = claimed.fence, outcome = outcome.label(), status = %to, "recorded");
            if let Outcome::Conflict { on, current } = outcome {
                metrics::counter!(m::VERSION_CONFLICTS_TOTAL, "provider" => row.provider.as_str())
                    .increment(1);
                warn!(
                    operation_id = op,
                    conflict = on.code(),
                    current = current.as_deref(),
                    "precondition no longer holds: cancelled; a new intent and approval are needed"
                );
            }
            if to == Status::Unknown {
                ring_reconcile(&deps.publisher, row.key()).await;
            }
        }
        TransitionOutcome::Stale | TransitionOutcome::Refused(_) => {
            // A webhook or reconcile moved the row first; our attempt row still holds
            // what the provider said, for reconcile and the operators.
            warn!(
                operation_id = op,
                fence = claimed.fence,
                outcome = outcome.label(),
                "fenced out: the row moved; attempt recorded only"
            );
            metrics::counter!(m::FENCED_OUT_TOTAL, "action" => row.action.wire_name()).increment(1);
        }
    }
    Ok(())
}
