//! Reconciling one operation: local evidence first, then the provider, then what the
//! domain's `judge` and `settle` say to do. Every move is a fenced compare-and-set, so two
//! reconcilers on one operation resolve it once.

use std::sync::Arc;

use fleet_broker::{Publisher, Queue};
use fleet_core::reconcile::{
    definitive_attempt, judge, settle, AskAgain, AttemptAges, AttemptSeen, Found, Reading, Settle,
    SettleFacts,
};
use fleet_core::{Doorbell, Event, OpRef, Reason, Status};
use fleet_providers::Providers;
use fleet_runtime::metric_names as m;
use fleet_store::{
    AttemptRow, AuditDelays, OperationRow, Store, StoreError, Transition, TransitionOutcome,
    WebhookOutcome,
};
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::lookup::{contract_of, look_up};
use crate::{ReconcileDeps, ReconcileSettings};

pub struct Reconciler {
    pub(crate) store: Store,
    publisher: Publisher,
    pub(crate) providers: Arc<Providers>,
    /// Derived from the providers' contracts once, read by every sweep.
    pub(crate) audit_delays: AuditDelays,
    pub(crate) settings: ReconcileSettings,
}

const ACTOR: &str = "reconcile";

impl Reconciler {
    pub fn new(deps: &ReconcileDeps) -> Self {
        Self {
            store: deps.store.clone(),
            publisher: deps.publisher.clone(),
            providers: deps.providers.clone(),
            audit_delays: crate::audit::audit_delays(&deps.providers),
            settings: deps.settings.clone(),
        }
    }

    /// Brings one operation in line with the provider, if it needs it.
    pub async fn reconcile(&self, key: OpRef<'_>) -> Result<(), StoreError> {
        let op = key.operation_id;
        let Some(mut row) = self.store.get(key).await? else {
            return Ok(());
        };
        if matches!(row.status, Status::Accepted | Status::Unknown) {
            // A signed provider event that arrived before anything could link it is the
            // cheapest evidence there is: apply it before asking the provider.
            let applied = self.store.apply_unlinked_webhooks(key).await?;
            if applied.iter().any(|o| {
                matches!(
                    o,
                    WebhookOutcome::Applied { .. } | WebhookOutcome::Escalated { .. }
                )
            }) {
                info!(
                    operation_id = op,
                    "applied webhook events that arrived before the operation could be linked"
                );
                row = match self.store.get(key).await? {
                    Some(row) => row,
                    None => return Ok(()),
                };
            }
        }
        match row.status {
            Status::InProgress if row.lease_expired => {
                let t = Transition {
                    reason: Some(Reason::LeaseExpired),
                    ..Transition::new(
                        key,
                        Status::InProgress,
                        row.fence,
                        Event::LeaseExpired,
                        ACTOR,
                    )
                };
                if let TransitionOutcome::Moved { .. } = self.store.transition(t, None).await? {
                    metrics::counter!(m::LEASE_EXPIRED_TOTAL, "action" => row.action.clone())
                        .increment(1);
                    warn!(
                        operation_id = op,
                        fence = row.fence,
                        "lease expired during the call: unknown"
                    );
                    if let Some(row) = self.store.get(key).await? {
                        return self.settle_unknown(&row).await;
                    }
                }
                Ok(())
            }
            Status::Accepted if row.deadline_passed => self.settle_accepted(&row).await,
            Status::Unknown if row.escalated_at.is_none() => self.settle_unknown(&row).await,
            Status::InProgress | Status::Accepted | Status::Unknown => Ok(()),
            Status::NotStarted
            | Status::Succeeded
            | Status::Failed
            | Status::Cancelled
            | Status::Disputed => Ok(()),
        }
    }

    async fn settle_unknown(&self, row: &OperationRow) -> Result<(), StoreError> {
        let op = row.operation_id.as_str();
        let attempts = self.store.attempts(row.key()).await?;
        let seen: Vec<AttemptSeen<'_>> = attempts.iter().map(attempt_seen).collect();
        if let Some((found, fence)) = definitive_attempt(&seen) {
            // A worker that lost its lease still wrote what the provider told it.
            let evidence =
                json!({"via": "attempts", "fence": fence, "found": [found.external_id()]});
            return self.resolve(row, Status::Unknown, &found, evidence).await;
        }
        let external_id = row
            .external_id
            .clone()
            .or_else(|| attempts.iter().rev().find_map(|a| a.external_id.clone()));
        let Reading { lookup, evidence } =
            look_up(&self.providers, row, external_id.as_deref()).await;
        let ages = self.store.attempt_ages(row.key()).await?;
        let failed_lookups_so_far = row.lookup_failures.max(0) as u32;
        let ages = AttemptAges {
            newest_ms: ages.newest,
            newest_start_ms: ages.newest_start,
            oldest_ms: ages.oldest,
            failed_lookups_so_far,
        };
        let contract = contract_of(&self.providers, row, self.settings.escalate_after_lookups);
        let facts = SettleFacts::new(&seen, failed_lookups_so_far, contract);
        match settle(judge(&lookup, ages, contract), facts) {
            Settle::Resolve(found) => self.resolve(row, Status::Unknown, &found, evidence).await,
            Settle::AcceptAgain(found) => {
                self.store
                    .record_lookup(row.key(), row.fence, &evidence, true, None)
                    .await?;
                self.resolve(row, Status::Unknown, &found, evidence).await
            }
            Settle::AskAgain { why, failed, after } => {
                match why {
                    AskAgain::AcceptedNotFoundYet => warn!(
                        operation_id = op,
                        "accepted earlier but not found yet; asking again later"
                    ),
                    AskAgain::SearchMayLag => info!(
                        operation_id = op,
                        wait_ms = after.as_millis() as u64,
                        "not found yet; the search may lag, asking again later"
                    ),
                    AskAgain::LookupFailed => warn!(
                        operation_id = op,
                        failures = row.lookup_failures + 1,
                        "lookup failed; asking again later"
                    ),
                }
                self.store
                    .record_lookup(row.key(), row.fence, &evidence, failed, Some(after))
                    .await
            }
            Settle::SendBack => self.send_back(row, evidence).await,
            Settle::Escalate(reason) => self.escalate(row, reason, evidence).await,
        }
    }

    /// Past its deadline an accepted operation is looked up; a final answer settles it,
    /// anything else makes it unknown (reconcile then keeps asking, or escalates).
    async fn settle_accepted(&self, row: &OperationRow) -> Result<(), StoreError> {
        let Reading { lookup, evidence } =
            look_up(&self.providers, row, row.external_id.as_deref()).await;
        if let fleet_core::reconcile::Lookup::Matches(found) = &lookup {
            if let [found @ (Found::Succeeded { .. } | Found::Failed { .. })] = found.as_slice() {
                return self.resolve(row, Status::Accepted, found, evidence).await;
            }
        }
        let t = Transition {
            reason: Some(Reason::DeadlinePassed),
            evidence: Some(evidence),
            ..Transition::new(
                row.key(),
                Status::Accepted,
                row.fence,
                Event::DeadlinePassed,
                ACTOR,
            )
        };
        self.store.transition(t, None).await.map(|_| ())
    }

    async fn resolve(
        &self,
        row: &OperationRow,
        from: Status,
        found: &Found,
        evidence: Value,
    ) -> Result<(), StoreError> {
        let base = Transition::new(row.key(), from, row.fence, Event::LookupSucceeded, ACTOR);
        let t = match found {
            Found::Succeeded { external_id } => Transition {
                external_id: Some(external_id),
                ..base
            },
            Found::Failed { external_id, code } => Transition {
                event: Event::LookupFailed,
                external_id: Some(external_id),
                error_code: Some(code),
                ..base
            },
            Found::Pending { external_id } => Transition {
                event: Event::LookupAccepted,
                external_id: Some(external_id),
                deadline_s: Some(f64::from(self.settings.accepted_deadline_s)),
                ..base
            },
        };
        let outcome = self
            .store
            .record_lookup_and_move(
                &evidence,
                Transition {
                    reason: Some(Reason::Reconciled),
                    evidence: Some(evidence.clone()),
                    ..t
                },
            )
            .await?;
        if let TransitionOutcome::Moved { to, .. } = outcome {
            info!(operation_id = %row.operation_id, status = %to, external_id = found.external_id(), "reconciled");
        }
        Ok(())
    }

    /// Absence proven and a same-key retry is safe: back to not_started, ring execute.
    async fn send_back(&self, row: &OperationRow, evidence: Value) -> Result<(), StoreError> {
        let t = Transition {
            reason: Some(Reason::LookupProvedAbsence),
            evidence: Some(evidence.clone()),
            ..Transition::new(
                row.key(),
                Status::Unknown,
                row.fence,
                Event::LookupAbsent,
                ACTOR,
            )
        };
        let outcome = self.store.record_lookup_and_move(&evidence, t).await?;
        if let TransitionOutcome::Moved { .. } = outcome {
            info!(operation_id = %row.operation_id, "provider holds no effect; retrying with the same key");
            self.ring_execute(row.key()).await;
        }
        Ok(())
    }

    async fn escalate(
        &self,
        row: &OperationRow,
        reason: Reason,
        evidence: Value,
    ) -> Result<(), StoreError> {
        let t = Transition {
            reason: Some(reason),
            evidence: Some(evidence.clone()),
            escalate: true,
            ..Transition::new(
                row.key(),
                Status::Unknown,
                row.fence,
                Event::Escalate,
                ACTOR,
            )
        };
        let outcome = self.store.record_lookup_and_move(&evidence, t).await?;
        if let TransitionOutcome::Moved { .. } = outcome {
            warn!(operation_id = %row.operation_id, reason = reason.as_str(), "escalated to an operator");
        }
        Ok(())
    }

    /// Best effort: the sweeper re-rings approved rows that wait too long.
    pub(crate) async fn ring_execute(&self, op: OpRef<'_>) {
        let bell = Doorbell::new(op.tenant_id, op.operation_id);
        if let Err(e) = self
            .publisher
            .publish(Queue::OperationsExecute, &bell.to_bytes())
            .await
        {
            warn!(operation_id = op.operation_id, error = %e, "could not ring execute; the sweeper will try again");
        }
    }
}

/// An attempt row as `fleet_core::reconcile` reads it.
fn attempt_seen(a: &AttemptRow) -> AttemptSeen<'_> {
    AttemptSeen {
        fence: a.fence,
        outcome: a.outcome,
        external_id: a.external_id.as_deref(),
        detail: a.detail.as_deref(),
        http_status: a.http_status,
        replayed: a.replayed,
    }
}
