//! The resume algorithm (docs/design.md#execute): read the row, decide, claim, perform.
//! The doorbell only names the operation; everything else comes from the row.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::execute::{decide, Decision};
use fleet_core::{ApprovalStatus, Doorbell, Event, OpRef, Reason, Status};
use fleet_runtime::trace;
use fleet_store::{Claim, OperationRow, StoreError, Transition, TransitionOutcome};
use tokio::time::Instant;
use tracing::{error, info, warn, Instrument};

use crate::batches::Batches;
use crate::bell::ring_reconcile;
use crate::deps::ExecuteDeps;
use crate::facts::facts_of;
use crate::perform::perform;

pub struct ExecuteHandler {
    deps: ExecuteDeps,
    /// This worker's name on the leases it holds.
    owner: String,
    policies: Vec<String>,
    batches: Batches,
}

impl ExecuteHandler {
    /// Builds the handler and spawns its batching tasks: call it inside a Tokio runtime.
    pub fn new(deps: ExecuteDeps) -> Self {
        let owner = format!("execute:{}:{}", std::process::id(), ulid::Ulid::new());
        let policies = deps.settings.accepted_policies();
        let batches = Batches::spawn(&deps.store, policies.clone(), owner.clone(), &deps.settings);
        Self {
            deps,
            owner,
            policies,
            batches,
        }
    }

    /// The happy path is one statement: claim an approved, unexpired row under a current
    /// policy (together with the other doorbells being claimed at the same moment).
    /// Anything else reads the row and acts on what it says, at most twice: a row that
    /// moved between the read and the claim is read again once, then left to the next
    /// doorbell or the sweeper.
    pub async fn resume(&self, op: OpRef<'_>) -> Result<(), StoreError> {
        // Taken before the claim is queued: the lease's deadlines count from no later
        // than the moment the database could have started it.
        let claim_sent_at = Instant::now();
        let ttl = self.deps.settings.lease_ttl_ms;
        let claim = match self.batches.claim(op).await {
            Some(claim) => claim,
            None => {
                self.deps
                    .store
                    .claim_ready(op, &self.policies, &self.owner, ttl)
                    .await?
            }
        };
        if let Claim::Claimed(claimed) = claim {
            return perform(&self.deps, &self.batches, *claimed, claim_sent_at).await;
        }
        for _ in 0..2 {
            let Some(row) = self.deps.store.get(op).await? else {
                info!(
                    operation_id = op.operation_id,
                    tenant_id = op.tenant_id,
                    "doorbell for an operation that is not prepared; nothing to do"
                );
                return Ok(());
            };
            match decide(facts_of(&row, &self.policies)) {
                Decision::Claim => {
                    let claim_sent_at = Instant::now();
                    let claim = self
                        .deps
                        .store
                        .claim(op, row.fence, &self.owner, self.deps.settings.lease_ttl_ms)
                        .await?;
                    match claim {
                        Claim::Claimed(claimed) => {
                            return perform(&self.deps, &self.batches, *claimed, claim_sent_at)
                                .await
                        }
                        Claim::NotClaimable => continue,
                    }
                }
                Decision::Cancel(reason) => return self.cancel(&row, reason).await,
                Decision::Escalate(reason) => return self.escalate(&row, reason).await,
                Decision::RingReconcile => {
                    ring_reconcile(&self.deps.publisher, op).await;
                    return Ok(());
                }
                Decision::Nothing => return Ok(()),
            }
        }
        Ok(())
    }

    async fn cancel(&self, row: &OperationRow, reason: Reason) -> Result<(), StoreError> {
        let approval_status =
            (reason == Reason::ApprovalExpired).then_some(ApprovalStatus::Expired);
        let t = Transition {
            reason: Some(reason),
            approval_status,
            ..Transition::new(
                row.key(),
                Status::NotStarted,
                row.fence,
                Event::CancelBeforeStart,
                "execute",
            )
        };
        match self.deps.store.transition(t, None).await? {
            TransitionOutcome::Moved { .. } => {
                warn!(operation_id = %row.operation_id, reason = reason.as_str(), "cancelled before any provider call")
            }
            TransitionOutcome::Stale | TransitionOutcome::Refused(_) => {
                info!(operation_id = %row.operation_id, "row moved before it could be cancelled")
            }
        }
        Ok(())
    }

    async fn escalate(&self, row: &OperationRow, reason: Reason) -> Result<(), StoreError> {
        let t = Transition {
            reason: Some(reason),
            escalate: true,
            ..Transition::new(
                row.key(),
                Status::NotStarted,
                row.fence,
                Event::Escalate,
                "execute",
            )
        };
        match self.deps.store.transition(t, None).await? {
            TransitionOutcome::Moved { .. } => {
                error!(operation_id = %row.operation_id, reason = reason.as_str(), "snapshot does not match its approval; escalated without a call")
            }
            TransitionOutcome::Stale | TransitionOutcome::Refused(_) => {
                info!(operation_id = %row.operation_id, "row moved before it could be escalated")
            }
        }
        Ok(())
    }
}

impl Handler for ExecuteHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        let rung = match Doorbell::parse(delivery.body) {
            Ok(rung) => rung,
            Err(reason) => {
                warn!(reason, "execute doorbell refused");
                return Disposition::DeadLetter {
                    reason: reason.to_owned(),
                };
            }
        };
        let id = rung.operation_id.as_str();
        // The bell's trace (the operation's, from whoever rang it) until the row is read;
        // a claimed operation is performed under the trace its intake stored.
        let bell_trace = trace::continue_or_start(delivery.traceparent);
        let resuming = async {
            match &rung.tenant_id {
                Some(tenant) => self.resume(OpRef::new(tenant, id)).await,
                // A bell from before bells named the tenant: every row with the id is looked
                // at (a row with nothing to do stays as it is).
                None => match self.deps.store.tenants_of(id).await {
                    Ok(tenants) => {
                        let mut resumed = Ok(());
                        for tenant in &tenants {
                            resumed = resumed.and(self.resume(OpRef::new(tenant, id)).await);
                        }
                        resumed
                    }
                    Err(e) => Err(e),
                },
            }
        };
        let span = trace::operation_span(id, &bell_trace);
        let resumed = trace::scoped(bell_trace, resuming.instrument(span)).await;
        match resumed {
            Ok(()) => Disposition::Ack,
            Err(e) => {
                warn!(operation_id = id, error = %e, "store unavailable; the doorbell will be redelivered");
                Disposition::Retry
            }
        }
    }
}
