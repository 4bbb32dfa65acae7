//! The series fleet-execute owns, created at zero when it starts, so that dashboards and
//! alerts see every (provider, action, outcome) from the first scrape rather than from
//! its first occurrence (and `increase()` does not miss that first one).

use fleet_broker::Queue;
use fleet_core::{Doorbell, Effect, Outcome, CATALOGUE};
use fleet_runtime::metric_names as m;

/// The final statuses a claimed operation can reach here (`fleet_end_to_end_seconds`).
const FINAL: [&str; 3] = ["succeeded", "failed", "cancelled"];

pub fn series_at_zero() {
    fleet_providers::series_at_zero();
    fleet_broker::consumer_series_at_zero(Queue::OperationsExecute, &Doorbell::REFUSALS);
    fleet_broker::publisher_series_at_zero(&[Queue::OperationsReconcile]);
    for spec in CATALOGUE {
        let (action, provider) = (spec.wire_name, spec.provider.as_str());
        for outcome in Outcome::LABELS {
            let labels = [
                ("provider", provider),
                ("action", action),
                ("outcome", outcome),
            ];
            metrics::counter!(m::PROVIDER_CALLS_TOTAL, &labels).increment(0);
            // Registering a histogram renders it with empty buckets.
            let _ = metrics::histogram!(m::PROVIDER_CALL_DURATION_SECONDS, &labels);
        }
        metrics::counter!(m::LEASE_EXPIRED_TOTAL, "action" => action).increment(0);
        metrics::counter!(m::FENCED_OUT_TOTAL, "action" => action).increment(0);
        // Only a conditional update can meet a conflict.
        if spec.effect == Effect::ConditionalUpdate {
            metrics::counter!(m::VERSION_CONFLICTS_TOTAL, "provider" => provider).increment(0);
        }
    }
    for to in FINAL {
        let _ = metrics::histogram!(m::END_TO_END_SECONDS, "to" => to);
    }
}
