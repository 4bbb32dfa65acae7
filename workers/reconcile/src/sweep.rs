//! The sweeper: every SWEEP_INTERVAL_MS, in bounded batches — expired leases become
//! unknown, due unknown and overdue accepted rows are reconciled, approved rows that
//! waited too long get their execute bell rung again, approvals that expired before
//! anything started are cancelled, and operations that succeeded after an uncertain
//! attempt get their one post-settlement audit.

use std::sync::Arc;

use fleet_runtime::metric_names as m;
use fleet_runtime::Ticker;
use fleet_store::{AuditDelays, StoreError};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::audit::audit_delays;
use crate::reconciler::Reconciler;
use crate::settings::ReconcileSettings;

pub async fn run(
    reconciler: Arc<Reconciler>,
    settings: ReconcileSettings,
    concurrency: usize,
    shutdown: CancellationToken,
) {
    // Derived from the providers' contracts once, read by every sweep.
    let audit_delays = audit_delays(&reconciler.providers);
    let mut ticker = Ticker::new(settings.sweep_interval(), shutdown);
    while ticker.tick().await {
        let outcome = match sweep_once(&reconciler, &audit_delays, &settings, concurrency).await {
            Ok(()) => "ok",
            Err(e) => {
                warn!(error = %e, "sweep failed; next tick retries");
                "error"
            }
        };
        metrics::counter!(m::RECONCILE_SWEEPS_TOTAL, "outcome" => outcome).increment(1);
    }
}

pub async fn sweep_once(
    r: &Reconciler,
    audit_delays: &AuditDelays,
    settings: &ReconcileSettings,
    concurrency: usize,
) -> Result<(), StoreError> {
    let store = &r.store;
    let batch = settings.sweep_batch;
    let expired = store.expire_leases(batch).await?;
    if !expired.unknown.is_empty() {
        metrics::counter!(m::LEASE_EXPIRED_TOTAL, "action" => "any")
            .increment(expired.unknown.len() as u64);
        warn!(
            count = expired.unknown.len(),
            "leases expired during provider calls: unknown"
        );
    }
    if !expired.released.is_empty() {
        info!(
            count = expired.released.len(),
            "claims lost before their request was sent: released, nothing to look up"
        );
    }
    for op in &expired.released {
        r.ring_execute(op.op()).await;
    }
    let mut due = store
        .take_due_unknown(batch, settings.lookup_recheck())
        .await?;
    due.extend(store.accepted_past_deadline(batch).await?);
    due.sort();
    due.dedup();
    futures_util::stream::iter(due)
        .for_each_concurrent(concurrency.max(1), |op| async move {
            if let Err(e) = r.reconcile(op.op()).await {
                warn!(operation_id = %op, error = %e, "reconcile failed; the next sweep retries");
            }
        })
        .await;
    for op in store
        .take_stranded_approved(batch, settings.unstarted_redrive())
        .await?
    {
        r.ring_execute(op.op()).await;
    }
    // Pending operations a standing mandate could approve: rung, so execute approves
    // them by the mandate at claim (an intent from the queue gets no other bell).
    for op in store
        .take_mandate_due(batch, settings.unstarted_redrive())
        .await?
    {
        r.ring_execute(op.op()).await;
    }
    store.cancel_expired_approvals(batch).await?;
    for row in store.due_audits(audit_delays, batch).await? {
        if let Err(e) = r.audit(&row).await {
            warn!(operation_id = %row.operation_id, error = %e, "audit failed; the next sweep retries");
        }
    }
    Ok(())
}
