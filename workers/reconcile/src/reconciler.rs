//! Reconciling one operation: local evidence first, then the provider, then what the
//! domain's `judge` and `settle` say to do, and the move `fleet_core::reconcile`'s step
//! names for it. This file only reads, asks and applies. Every move is a fenced
//! compare-and-set, so two reconcilers on one operation resolve it once.

use std::sync::Arc;

use fleet_broker::{Publisher, Queue};
use fleet_core::attempt_record::AttemptDetail;
use fleet_core::confirmation::Confirmation;
use fleet_core::reconcile::{
    definitive_attempt, next_step, past_deadline_move, settle_unknown, AskAgain, AttemptAges,
    AttemptSeen, LookupMove, Reading, RowDue, Settle, SettleFacts, Step, UnknownEvidence,
};
use fleet_core::{Event, OpRef};
use fleet_providers::Providers;
use fleet_runtime::metric_names as m;
use fleet_runtime::trace;
use fleet_store::{
    AttemptRow, LostClaim, OperationRow, ReconcileStore, StoreError, Transition, TransitionOutcome,
    WebhookOutcome,
};
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::deps::ReconcileDeps;
use crate::lookup::{contract_of, look_up};
use crate::settings::ReconcileSettings;

pub struct Reconciler {
    pub(crate) store: ReconcileStore,
    publisher: Publisher,
    pub(crate) providers: Arc<Providers>,
    pub(crate) settings: ReconcileSettings,
}

const ACTOR: &str = "reconcile";

impl Reconciler {
    pub fn new(deps: &ReconcileDeps) -> Self {
        Self {
            store: deps.store.clone(),
            publisher: deps.publisher.clone(),
            providers: deps.providers.clone(),
            settings: deps.settings.clone(),
        }
    }

    /// Brings one operation in line with the provider, if it needs it.
    pub async fn reconcile(&self, key: OpRef<'_>) -> Result<(), StoreError> {
        let Some(row) = self.store.get(key).await? else {
            return Ok(());
        };
        // Under the trace the operation's intake stored: what is logged carries it, and the
        // lookups and bells carry it on.
        let stored = row.trace_parent.clone();
        let work = self.reconcile_row(key, row);
        trace::in_operation(key.operation_id, stored.as_deref(), work).await
    }

    async fn reconcile_row(&self, key: OpRef<'_>, mut row: OperationRow) -> Result<(), StoreError> {
        let op = key.operation_id;
        if row_due(&row).applies_unlinked_webhooks_first() {
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
        match next_step(row_due(&row)) {
            Step::ExpireLease => match self.store.expire_lease(key, row.fence).await? {
                LostClaim::Unknown => {
                    metrics::counter!(m::LEASE_EXPIRED_TOTAL, "action" => row.action.wire_name())
                        .increment(1);
                    warn!(
                        operation_id = op,
                        fence = row.fence,
                        "lease expired during the call: unknown"
                    );
                    match self.store.get(key).await? {
                        Some(row) => self.settle_unknown(&row).await,
                        None => Ok(()),
                    }
                }
                LostClaim::Released => {
                    // The attempt's send mark proves nothing left: the same request may
                    // go again, and there is nothing to look up.
                    info!(
                        operation_id = op,
                        fence = row.fence,
                        "claim lost before its request was sent: released"
                    );
                    self.ring_execute(key).await;
                    Ok(())
                }
                LostClaim::Stale => Ok(()),
            },
            Step::SettleAccepted => self.settle_accepted(&row).await,
            Step::SettleUnknown => self.settle_unknown(&row).await,
            Step::LeaveAlone => Ok(()),
        }
    }

    /// An unknown operation: what it learnt ([`Reconciler::unknown_evidence`]), the one
    /// decision `fleet_core::reconcile::settle_unknown` makes of it, and that decision
    /// applied.
    async fn settle_unknown(&self, row: &OperationRow) -> Result<(), StoreError> {
        let (evidence, proof) = self.unknown_evidence(row).await?;
        let decided = settle_unknown(&evidence);
        self.apply_settle(row, &decided, proof).await
    }

    /// A final answer one of the operation's attempts recorded, else the provider's answer
    /// to a lookup with what the attempts and earlier lookups add to it; with the evidence
    /// the move will record.
    async fn unknown_evidence(
        &self,
        row: &OperationRow,
    ) -> Result<(UnknownEvidence, Value), StoreError> {
        let attempts = self.store.attempts(row.key()).await?;
        let seen: Vec<AttemptSeen<'_>> = attempts.iter().map(attempt_seen).collect();
        if let Some((found, fence)) = definitive_attempt(&seen) {
            let proof = json!({"via": "attempts", "fence": fence, "found": [found.external_id()]});
            return Ok((UnknownEvidence::Recorded { found, fence }, proof));
        }
        let external_id = row
            .external_id
            .clone()
            .or_else(|| attempts.iter().rev().find_map(|a| a.external_id.clone()));
        let Reading { lookup, evidence } =
            look_up(&self.providers, row, external_id.as_deref()).await;
        let ages = self.store.attempt_ages(row.key()).await?;
        let failed_lookups_so_far = row.lookup_failures.max(0) as u32;
        let contract = contract_of(&self.providers, row, self.settings.escalate_after_lookups);
        let looked_up = UnknownEvidence::LookedUp {
            lookup,
            ages: AttemptAges {
                newest_ms: ages.newest,
                newest_start_ms: ages.newest_start,
                oldest_ms: ages.oldest,
                failed_lookups_so_far,
            },
            contract,
            facts: SettleFacts::new(&seen, failed_lookups_so_far, contract),
        };
        Ok((looked_up, evidence))
    }

    /// Does what `settle_unknown` decided: records the lookup and asks again later, or
    /// moves the row as the decision's move says (a pending effect accepted again counts
    /// its lookup as failed first, so that patience runs out).
    async fn apply_settle(
        &self,
        row: &OperationRow,
        decided: &Settle,
        proof: Value,
    ) -> Result<(), StoreError> {
        let op = row.operation_id.as_str();
        match decided {
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
                return self
                    .store
                    .record_lookup(row.key(), row.fence, &proof, *failed, Some(*after))
                    .await;
            }
            Settle::AcceptAgain(_) => {
                self.store
                    .record_lookup(row.key(), row.fence, &proof, true, None)
                    .await?;
            }
            Settle::Resolve(_) | Settle::SendBack | Settle::Escalate(_) => {}
        }
        match decided.lookup_move(self.settings.accepted_deadline_s) {
            Some(step) => self.apply_lookup(row, step, proof).await,
            None => Ok(()),
        }
    }

    /// Past its deadline an accepted operation is looked up; where that moves it is
    /// `fleet_core::reconcile::past_deadline_move`'s.
    async fn settle_accepted(&self, row: &OperationRow) -> Result<(), StoreError> {
        let Reading { lookup, evidence } =
            look_up(&self.providers, row, row.external_id.as_deref()).await;
        let step = past_deadline_move(&lookup, self.settings.accepted_deadline_s);
        if step.records_lookup {
            self.apply_lookup(row, step, evidence).await
        } else {
            self.apply(row, step, Some(evidence)).await.map(|_| ())
        }
    }

    /// Applies a move a lookup (or an attempt's final answer) justified, with that lookup
    /// recorded in the same transaction, and says so; a row sent back rings execute.
    async fn apply_lookup(
        &self,
        row: &OperationRow,
        step: LookupMove<'_>,
        evidence: Value,
    ) -> Result<(), StoreError> {
        let outcome = self.apply(row, step, Some(evidence)).await?;
        let TransitionOutcome::Moved { to, .. } = outcome else {
            return Ok(());
        };
        match step.event {
            Event::LookupAbsent => {
                info!(operation_id = %row.operation_id, "provider holds no effect; retrying with the same key");
                self.ring_execute(row.key()).await;
            }
            Event::Escalate => {
                warn!(operation_id = %row.operation_id, reason = step.reason.as_str(), "escalated to an operator");
            }
            _ => {
                info!(operation_id = %row.operation_id, status = %to, external_id = step.external_id.unwrap_or_default(), "reconciled");
            }
        }
        Ok(())
    }

    /// The store's fenced transition for `step`, at the fence `row` was read with; with
    /// the lookup recorded in the same transaction when the move is its verdict.
    async fn apply(
        &self,
        row: &OperationRow,
        step: LookupMove<'_>,
        evidence: Option<Value>,
    ) -> Result<TransitionOutcome, StoreError> {
        let t = Transition {
            reason: Some(step.reason),
            error_code: step.error_code,
            external_id: step.external_id,
            deadline_s: step.deadline_s.map(f64::from),
            escalate: step.escalate,
            evidence: evidence.clone(),
            confirmation: step
                .external_id
                .zip(evidence.as_ref())
                .map(|(object_id, evidence)| confirmation_of(object_id, evidence)),
            ..Transition::new(row.key(), step.from, row.fence, step.event, ACTOR)
        };
        match evidence {
            Some(evidence) if step.records_lookup => {
                self.store.record_lookup_and_move(&evidence, t).await
            }
            _ => self.store.transition(t, None).await,
        }
    }

    /// Best effort: the sweeper re-rings approved rows that wait too long.
    pub(crate) async fn ring_execute(&self, op: OpRef<'_>) {
        if let Err(e) = self.publisher.ring(Queue::OperationsExecute, op).await {
            warn!(operation_id = op.operation_id, error = %e, "could not ring execute; the sweeper will try again");
        }
    }
}

/// What `fleet_core::reconcile::next_step` reads of a row.
fn row_due(row: &OperationRow) -> RowDue {
    RowDue {
        status: row.status,
        lease_expired: row.lease_expired,
        deadline_passed: row.deadline_passed,
        escalated: row.escalated_at.is_some(),
    }
}

/// An attempt row as `fleet_core::reconcile` reads it.
fn attempt_seen(a: &AttemptRow) -> AttemptSeen<'_> {
    AttemptSeen {
        fence: a.fence,
        outcome: a.outcome,
        external_id: a.external_id.as_deref(),
        detail: a
            .detail
            .as_deref()
            .map(|text| AttemptDetail::read(a.outcome, text)),
        http_status: a.http_status,
        replayed: a.replayed,
    }
}

/// What a lookup move's evidence proves a success by: an attempt's own final answer
/// (read from `attempts`, `via: attempts`, with its fence), else the lookup at the
/// provider.
fn confirmation_of(object_id: &str, evidence: &Value) -> Confirmation {
    match (evidence["via"].as_str(), evidence["fence"].as_i64()) {
        (Some("attempts"), Some(fence)) => Confirmation::Answer {
            object_id: object_id.to_owned(),
            fence,
            provider_request_id: None,
        },
        _ => Confirmation::Lookup {
            object_id: object_id.to_owned(),
            lookup: evidence.clone(),
        },
    }
}
