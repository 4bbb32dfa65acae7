//! The series fleet-relay owns, created at zero when it starts, so that dashboards and
//! alerts see every event type from the first scrape rather than from its first event.
//! (The outbox gauges read from Postgres are not among them: they appear at the first
//! successful read, and an alert relies on their absence until then.)

use fleet_core::events::EventType;
use fleet_runtime::metric_names as m;

pub fn series_at_zero() {
    for t in EventType::ALL {
        metrics::counter!(m::EVENTS_PUBLISHED_TOTAL, "type" => t.as_str()).increment(0);
    }
    metrics::counter!(m::EVENTS_PUBLISH_FAILURES_TOTAL).increment(0);
    fleet_broker::publisher_series_at_zero(&[]);
}
