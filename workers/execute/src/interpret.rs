//! Doing what `fleet_core::execute::gate` decided for a claimed attempt: call the
//! provider under the lease (`call_under_lease`), or end the claim without a request as
//! the decision says. Whatever ends without a call lets go of the mandate held for it.

use fleet_core::attempt_record::AttemptDetail;
use fleet_core::execute::Gate;
use fleet_core::{AttemptOutcome, Outcome, Reason};
use fleet_store::{AttemptRecord, ClaimedOperation, StoreError};
use tracing::{error, info, warn};

use crate::batches::Batches;
use crate::call_under_lease::call_under_lease;
use crate::deps::ExecuteDeps;
use crate::gather::PreCall;
use crate::mandate_check::mandate_of;
use crate::record::record;

pub(crate) async fn interpret(
    deps: &ExecuteDeps,
    batches: &Batches,
    claimed: &ClaimedOperation,
    pre: PreCall<'_>,
    decision: Gate,
    claim_sent_at: tokio::time::Instant,
) -> Result<(), StoreError> {
    let (reason, attempt_outcome) = match decision {
        Gate::Go => return call_under_lease(deps, batches, claimed, pre, claim_sent_at).await,
        Gate::Escalate { reason, outcome } => (reason, outcome),
        Gate::PayerCheck | Gate::NotExecuted(_) | Gate::Stalled => {
            return end_without_call(deps, batches, claimed, pre, decision).await
        }
    };
    let row = &claimed.row;
    let (op, fence) = (row.operation_id.as_str(), claimed.fence);
    // The signature and mandate checks said why when they refused.
    match reason {
        Reason::SnapshotHashMismatch => error!(
            operation_id = op,
            fence, "stored snapshot does not match its approved hash; escalating without a call"
        ),
        Reason::UnbuildableRequest => {
            error!(operation_id = op, action = %row.action, "stored payload does not fit its action; escalating without a call")
        }
        Reason::KeyRetentionPassed => warn!(
            operation_id = op,
            fence, "idempotency key past its retention; escalating without a call"
        ),
        _ => {}
    }
    escalate_without_call(deps, batches, claimed, reason, attempt_outcome).await
}

/// Sends nothing and hands the operation to a person: the row becomes `unknown`,
/// escalated with `reason`, and the claim's attempt is recorded as `attempt_outcome`
/// with `reason` as its detail. The row is escalated, so it is never claimed again, and
/// no reconcile path calls for it.
async fn escalate_without_call(
    deps: &ExecuteDeps,
    batches: &Batches,
    claimed: &ClaimedOperation,
    reason: Reason,
    attempt_outcome: AttemptOutcome,
) -> Result<(), StoreError> {
    let outcome = Outcome::Unknown {
        reason,
        escalate: true,
    };
    let attempt = AttemptRecord::with_detail(attempt_outcome, &AttemptDetail::Because { reason });
    record(deps, batches, claimed, &outcome, attempt, None).await
}

/// The endings without a call that are not an escalation: what the payer check decided,
/// a mandate revoked before its hold, a claim stalled past its lease's trust.
async fn end_without_call(
    deps: &ExecuteDeps,
    batches: &Batches,
    claimed: &ClaimedOperation,
    pre: PreCall<'_>,
    decision: Gate,
) -> Result<(), StoreError> {
    let row = &claimed.row;
    let (op, fence) = (row.operation_id.as_str(), claimed.fence);
    if let Some(hold) = &pre.hold {
        hold.release().await;
    }
    match (decision, pre.payer) {
        (Gate::PayerCheck, Some((outcome, attempt, evidence))) => {
            record(deps, batches, claimed, &outcome, attempt, evidence).await
        }
        (Gate::NotExecuted(reason), _) => {
            info!(
                operation_id = op,
                mandate_id = mandate_of(row),
                reason = reason.as_str(),
                "the mandate was revoked before the call; nothing is sent"
            );
            let outcome = Outcome::NotExecuted { reason };
            let attempt = AttemptRecord::with_detail(
                AttemptOutcome::NotExecuted,
                &AttemptDetail::Because { reason },
            );
            record(deps, batches, claimed, &outcome, attempt, None).await
        }
        // Stalled between claim and call past the point where the lease is trusted:
        // nothing was sent, and nothing may be sent now. The row is left as it is, for
        // reconcile once the lease expires.
        _ => {
            warn!(
                operation_id = op,
                fence, "lease no longer trusted before the call; not calling"
            );
            let attempt = AttemptRecord::with_detail(
                AttemptOutcome::NotExecuted,
                &AttemptDetail::LeaseLostBeforeCall,
            );
            deps.store.record_attempt(row.key(), fence, &attempt).await
        }
    }
}
