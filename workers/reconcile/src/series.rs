//! The series fleet-reconcile owns, created at zero when it starts, so that dashboards
//! and alerts see them from the first scrape rather than from their first occurrence.
//! (The fleet gauges read from Postgres are not among them: they appear at the first
//! successful read, and an alert relies on their absence until then.)

use fleet_broker::Queue;
use fleet_core::{Action, Doorbell, CATALOGUE};
use fleet_runtime::metric_names as m;

/// The final statuses reconcile settles an unknown operation to.
const FINAL: [&str; 3] = ["succeeded", "failed", "cancelled"];

pub fn series_at_zero() {
    fleet_providers::series_at_zero();
    fleet_broker::consumer_series_at_zero(Queue::OperationsReconcile, &Doorbell::REFUSALS);
    fleet_broker::publisher_series_at_zero(&[Queue::OperationsExecute]);
    // Only an effect that may happen twice is audited for a duplicate.
    for spec in CATALOGUE.iter().filter(|s| s.may_duplicate()) {
        metrics::counter!(m::DUPLICATE_EFFECTS_DETECTED_TOTAL, "provider" => spec.provider.as_str(), "action" => spec.wire_name).increment(0);
    }
    // The sweeper counts the leases it expires under "any" (it moves them in bulk).
    for action in Action::ALL
        .map(Action::wire_name)
        .into_iter()
        .chain(["any"])
    {
        metrics::counter!(m::LEASE_EXPIRED_TOTAL, "action" => action).increment(0);
    }
    for outcome in ["ok", "error"] {
        metrics::counter!(m::RECONCILE_SWEEPS_TOTAL, "outcome" => outcome).increment(0);
    }
    for to in FINAL {
        // Registering a histogram renders it with empty buckets.
        let _ = metrics::histogram!(m::TIME_TO_RECONCILIATION_SECONDS, "to" => to);
    }
}
