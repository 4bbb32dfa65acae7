//! The fleet-wide gauges. Only reconcile computes them, from Postgres, so replicas of the
//! other workers never double count (and several reconcile replicas report the same value).

use std::time::Duration;

use fleet_runtime::metric_names as m;
use fleet_runtime::Ticker;
use fleet_store::ReconcileStore;
use tokio_util::sync::CancellationToken;

/// Every `every`, computes the gauges; pending approvals closing within `expiring_soon`
/// count as expiring soon.
pub async fn run(
    store: ReconcileStore,
    every: Duration,
    expiring_soon: Duration,
    shutdown: CancellationToken,
) {
    let mut ticker = Ticker::new(every, shutdown);
    while ticker.tick().await {
        match store.fleet_gauges().await {
            Ok(g) => {
                metrics::gauge!(m::OPERATIONS_UNKNOWN).set(g.unknown as f64);
                metrics::gauge!(m::OPERATIONS_ESCALATED).set(g.escalated as f64);
                metrics::gauge!(m::OLDEST_UNKNOWN_AGE_SECONDS).set(g.oldest_unknown_age_s);
                metrics::gauge!(m::OPERATIONS_BY_STATUS, "status" => "unknown")
                    .set(g.unknown as f64);
                metrics::gauge!(m::OPERATIONS_BY_STATUS, "status" => "in_progress")
                    .set(g.in_progress as f64);
                metrics::gauge!(m::OPERATIONS_BY_STATUS, "status" => "accepted")
                    .set(g.accepted as f64);
                metrics::gauge!(m::OPERATIONS_BY_STATUS, "status" => "ready").set(g.ready as f64);
                metrics::counter!(m::MANUAL_INVESTIGATIONS_TOTAL)
                    .absolute(g.operator_decisions.max(0) as u64);
            }
            Err(e) => tracing::warn!(error = %e, "could not compute the fleet gauges"),
        }
        match store.approval_gauges(expiring_soon.as_secs_f64()).await {
            Ok(g) => {
                metrics::gauge!(m::APPROVALS_PENDING).set(g.pending as f64);
                metrics::gauge!(m::APPROVALS_EXPIRING_SOON).set(g.expiring_soon as f64);
            }
            Err(e) => tracing::warn!(error = %e, "could not compute the approval gauges"),
        }
    }
}
