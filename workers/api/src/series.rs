//! The series fleet-api owns, created at zero when it starts, so that dashboards and
//! alerts see them from the first scrape. (`fleet_api_requests_total` and
//! `fleet_api_request_duration_seconds` are not among them: their status labels are only
//! known once a request is answered. Rules on them compare rates, for which a series
//! created at its first request is soon enough.)

use fleet_runtime::metric_names as m;

pub fn series_at_zero() {
    // The intake is fleet-prepare's too (fleet_intake), and counts the same way.
    fleet_intake::series::intake_series_at_zero();
    metrics::gauge!(m::API_WAITING_REQUESTS).increment(0.0);
}
