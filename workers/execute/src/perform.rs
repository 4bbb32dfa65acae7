//! One claimed attempt, as a leg of three steps: gather what the decision before the call
//! reads (`gather`), ask `fleet_core::execute::gate` once, and do what it decided
//! (`interpret`): call the provider once under the lease (resending only what provably
//! never left) and record the answer with the fence, or end the claim without a call.

use fleet_core::execute::gate;
use fleet_runtime::trace;
use fleet_store::{ClaimedOperation, StoreError};
use tokio::time::Instant;

use crate::batches::Batches;
use crate::deps::ExecuteDeps;
use crate::gather::gather;
use crate::interpret::interpret;

pub(crate) async fn perform(
    deps: &ExecuteDeps,
    batches: &Batches,
    claimed: ClaimedOperation,
    claim_sent_at: Instant,
) -> Result<(), StoreError> {
    // Under the trace the operation's intake stored: what is logged carries it, and the
    // provider request and any bell rung carry it on (a new span of it).
    let operation_id = claimed.row.operation_id.as_str().to_owned();
    let stored = claimed.row.trace_parent.clone();
    let leg = async move {
        let pre = gather(deps, &claimed, claim_sent_at).await?;
        let decision = gate(&pre.facts);
        interpret(deps, batches, &claimed, pre, decision, claim_sent_at).await
    };
    trace::in_operation(&operation_id, stored.as_deref(), leg).await
}
