//! The call a claim makes once nothing held it back: the provider is called while a
//! keeper renews the lease on its own task; a lease lost first abandons the call to
//! reconcile, and an answer is counted, looked into (a payee refused) and recorded.

use fleet_core::{Outcome, Precondition};
use fleet_runtime::metric_names as m;
use fleet_store::{ClaimedOperation, StoreError};
use tokio::time::Instant;
use tracing::warn;

use crate::batches::Batches;
use crate::bell::ring_reconcile;
use crate::deps::ExecuteDeps;
use crate::gather::PreCall;
use crate::lease;
use crate::pause;
use crate::payee_refused::payee_changed;
use crate::provider_call::call_provider;
use crate::record::record;

pub(crate) async fn call_under_lease(
    deps: &ExecuteDeps,
    batches: &Batches,
    claimed: &ClaimedOperation,
    pre: PreCall<'_>,
    claim_sent_at: Instant,
) -> Result<(), StoreError> {
    let row = &claimed.row;
    let (op, fence) = (row.operation_id.as_str(), claimed.fence);
    let PreCall {
        call,
        hold,
        started,
        ..
    } = pre;
    let Some(mut call) = call else {
        // The gate lets no call go without its request; nothing to send.
        return Ok(());
    };
    call.hold = hold.as_ref();
    let ttl = deps.settings.lease_ttl_ms;
    // The keeper runs on its own task (and takes its own pooled connection for each
    // renewal), so a slow call cannot delay a renewal.
    let mut keeper = tokio::spawn(lease::hold(
        deps.store.clone(),
        row.key().to_key(),
        fence,
        ttl,
        claim_sent_at,
    ));
    let answered = tokio::select! {
        biased;
        lost = &mut keeper => Err(lost.unwrap_or(lease::LeaseLost::RenewalTimedOut)),
        answered = call_provider(deps, batches, &call, fence) => Ok(answered),
    };
    keeper.abort();
    if let Some(hold) = &hold {
        hold.release().await;
    }
    let (outcome, attempt) = match answered {
        Ok(answered) => answered?,
        Err(lost) => {
            // The call may have reached the provider: nothing is known, unless the
            // attempt's send mark still says nothing was sent (the claim was waiting
            // for its slot, or for a 429's wait). Without the lease this worker may not
            // move the row either way: reconcile takes it from here, and releases it
            // without a lookup when the mark proves nothing left.
            warn!(
                operation_id = op,
                fence,
                reason = lost.as_str(),
                "lease lost during the provider call; abandoning it"
            );
            metrics::counter!(m::LEASE_EXPIRED_TOTAL, "action" => row.action.wire_name())
                .increment(1);
            deps.store
                .record_lost_claim(row.key(), fence, lost.as_str())
                .await?;
            ring_reconcile(&deps.publisher, row.key()).await;
            return Ok(());
        }
    };
    pause::point(pause::AFTER_PROVIDER_RESPONSE).await;
    let labels = [
        ("provider", row.provider.as_str().to_owned()),
        ("action", row.action.wire_name().to_owned()),
        ("outcome", outcome.label().to_owned()),
    ];
    metrics::counter!(m::PROVIDER_CALLS_TOTAL, &labels).increment(1);
    metrics::histogram!(m::PROVIDER_CALL_DURATION_SECONDS, &labels)
        .record(started.elapsed().as_secs_f64());
    let (attempt, evidence) = match &outcome {
        Outcome::Conflict {
            on: Precondition::Payee,
            ..
        } => payee_changed(&call, attempt).await,
        _ => (attempt, None),
    };
    record(deps, batches, claimed, &outcome, attempt, evidence).await?;
    pause::point(pause::AFTER_RECORD).await;
    Ok(())
}
