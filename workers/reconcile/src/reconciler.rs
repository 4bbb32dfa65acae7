//! Reconciling one operation: local evidence first, then the provider, then the verdict
//! of the domain's `judge`. Every move is a fenced compare-and-set, so two reconcilers on
//! one operation resolve it once.

use std::sync::Arc;
use std::time::Duration;

use fleet_broker::{Publisher, Queue};
use fleet_core::reconcile::{judge, AttemptAges, Found, Reading, Verdict};
use fleet_core::{AttemptOutcome, Doorbell, Event, OperationId, Status};
use fleet_providers::Providers;
use fleet_runtime::metric_names as m;
use fleet_store::{
    record_lookup_on, transition_in, AttemptRow, AuditDelays, OperationRow, Store, StoreError,
    Transition, TransitionOutcome, WebhookOutcome,
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
const MAX_LOOKUP_BACKOFF: Duration = Duration::from_secs(60);

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
    pub async fn reconcile(&self, op: &str) -> Result<(), StoreError> {
        let Some(mut row) = self.store.get(op).await? else {
            return Ok(());
        };
        if matches!(row.status, Status::Accepted | Status::Unknown) {
            // A signed provider event that arrived before anything could link it is the
            // cheapest evidence there is: apply it before asking the provider.
            let applied = self.store.apply_unlinked_webhooks(op).await?;
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
                row = match self.store.get(op).await? {
                    Some(row) => row,
                    None => return Ok(()),
                };
            }
        }
        match row.status {
            Status::InProgress if row.lease_expired => {
                let t = Transition {
                    reason: Some("lease_expired"),
                    ..Transition::new(
                        op,
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
                    if let Some(row) = self.store.get(op).await? {
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
        let attempts = self.store.attempts(op).await?;
        if let Some((found, fence)) = definitive_attempt(&attempts) {
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
        let ages = self.store.attempt_ages(op).await?;
        let ages = AttemptAges {
            newest_ms: ages.newest,
            newest_start_ms: ages.newest_start,
            oldest_ms: ages.oldest,
            failed_lookups_so_far: row.lookup_failures.max(0) as u32,
        };
        let contract = contract_of(&self.providers, row, self.settings.escalate_after_lookups);
        let accepted_earlier = attempts
            .iter()
            .any(|a| a.outcome == Some(AttemptOutcome::Accepted));
        let out_of_patience =
            row.lookup_failures.max(0) as u32 + 1 >= contract.escalate_after_failed_lookups;
        match judge(&lookup, ages, contract) {
            // Still pending at the provider after its deadline: accepted again, but only a
            // bounded number of times before a person looks.
            Verdict::Resolve(Found::Pending { .. }) if out_of_patience => {
                self.escalate(row, "still_pending", evidence).await
            }
            Verdict::Resolve(found @ Found::Pending { .. }) => {
                self.store
                    .record_lookup(op, row.fence, &evidence, true, None)
                    .await?;
                self.resolve(row, Status::Unknown, &found, evidence).await
            }
            Verdict::Resolve(found) => self.resolve(row, Status::Unknown, &found, evidence).await,
            // The provider accepted a request (a queued create) that no lookup shows yet:
            // that is not absence. Ask again; a person decides if it never appears.
            Verdict::Absent if accepted_earlier && out_of_patience => {
                self.escalate(row, "accepted_but_not_found", evidence).await
            }
            Verdict::Absent if accepted_earlier => {
                warn!(
                    operation_id = op,
                    "accepted earlier but not found yet; asking again later"
                );
                self.store
                    .record_lookup(op, row.fence, &evidence, true, Some(lookup_backoff(row)))
                    .await
            }
            // The key holds a saved error (a replayed 5xx): every same-key retry will get
            // the same answer until the key expires, so only a person can move this on.
            Verdict::Absent
                if attempts.iter().any(|a| {
                    a.replayed == Some(true) && a.http_status.is_some_and(|s| s >= 500)
                }) =>
            {
                self.escalate(row, "saved_error_replayed", evidence).await
            }
            Verdict::Absent => self.send_back(row, evidence).await,
            Verdict::WaitForSearchLag { wait_ms } => {
                info!(
                    operation_id = op,
                    wait_ms, "not found yet; the search may lag, asking again later"
                );
                self.store
                    .record_lookup(
                        op,
                        row.fence,
                        &evidence,
                        false,
                        Some(Duration::from_millis(wait_ms)),
                    )
                    .await
            }
            Verdict::RetryLater => {
                warn!(
                    operation_id = op,
                    failures = row.lookup_failures + 1,
                    "lookup failed; asking again later"
                );
                self.store
                    .record_lookup(op, row.fence, &evidence, true, Some(lookup_backoff(row)))
                    .await
            }
            Verdict::Escalate(reason) => self.escalate(row, reason, evidence).await,
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
            reason: Some("deadline_passed"),
            evidence: Some(evidence),
            ..Transition::new(
                &row.operation_id,
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
        let base = Transition::new(
            &row.operation_id,
            from,
            row.fence,
            Event::LookupSucceeded,
            ACTOR,
        );
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
            .apply_with_lookup(
                row,
                &evidence,
                Transition {
                    reason: Some("reconciled"),
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
            reason: Some("lookup_proved_absence"),
            evidence: Some(evidence.clone()),
            ..Transition::new(
                &row.operation_id,
                Status::Unknown,
                row.fence,
                Event::LookupAbsent,
                ACTOR,
            )
        };
        if let TransitionOutcome::Moved { .. } = self.apply_with_lookup(row, &evidence, t).await? {
            info!(operation_id = %row.operation_id, "provider holds no effect; retrying with the same key");
            self.ring_execute(&row.operation_id).await;
        }
        Ok(())
    }

    async fn escalate(
        &self,
        row: &OperationRow,
        reason: &'static str,
        evidence: Value,
    ) -> Result<(), StoreError> {
        let t = Transition {
            reason: Some(reason),
            evidence: Some(evidence.clone()),
            escalate: true,
            ..Transition::new(
                &row.operation_id,
                Status::Unknown,
                row.fence,
                Event::Escalate,
                ACTOR,
            )
        };
        if let TransitionOutcome::Moved { .. } = self.apply_with_lookup(row, &evidence, t).await? {
            warn!(operation_id = %row.operation_id, reason, "escalated to an operator");
        }
        Ok(())
    }

    /// Records the lookup and applies the move in one transaction: the history always
    /// shows the lookup that justified a move.
    async fn apply_with_lookup(
        &self,
        row: &OperationRow,
        evidence: &Value,
        t: Transition<'_>,
    ) -> Result<TransitionOutcome, StoreError> {
        let from = t.expected;
        let mut client = self.store.client().await?;
        let tx = client.transaction().await?;
        record_lookup_on(&tx, &row.operation_id, row.fence, evidence, false, None).await?;
        let outcome = transition_in(&tx, t, None).await?;
        tx.commit().await?;
        outcome.observe(from);
        Ok(outcome)
    }

    /// Best effort: the sweeper re-rings approved rows that wait too long.
    pub(crate) async fn ring_execute(&self, op: &str) {
        let Ok(id) = OperationId::parse(op) else {
            return;
        };
        if let Err(e) = self
            .publisher
            .publish(Queue::OperationsExecute, &Doorbell::new(&id).to_bytes())
            .await
        {
            warn!(operation_id = op, error = %e, "could not ring execute; the sweeper will try again");
        }
    }
}

/// Exponential pause after an inconclusive lookup: 1 s, 2 s, 4 s … at most a minute, so
/// `ESCALATE_AFTER_LOOKUPS` tries span a useful stretch of time, not a few sweeps.
fn lookup_backoff(row: &OperationRow) -> Duration {
    Duration::from_secs(1u64 << row.lookup_failures.clamp(0, 6)).min(MAX_LOOKUP_BACKOFF)
}

/// The newest attempt that recorded a final answer, if any.
fn definitive_attempt(attempts: &[AttemptRow]) -> Option<(Found, i64)> {
    attempts.iter().rev().find_map(|a| {
        let external_id = a.external_id.clone();
        let found = match a.outcome? {
            AttemptOutcome::Succeeded => Found::Succeeded {
                external_id: external_id?,
            },
            // "accepted" proves the provider took the request, not how it ended: its id is
            // looked up instead (and it forbids ever concluding absence, below).
            AttemptOutcome::Failed => Found::Failed {
                external_id: external_id.unwrap_or_default(),
                code: a
                    .detail
                    .clone()
                    .unwrap_or_else(|| "provider_rejected".into()),
            },
            _ => return None,
        };
        Some((found, a.fence))
    })
}
