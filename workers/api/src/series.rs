//! The series fleet-api owns, created at zero when it starts, so that dashboards and
//! alerts see them from the first scrape. (`fleet_api_requests_total` is not among them:
//! its status label is only known once a request is answered.)

use fleet_runtime::metric_names as m;

pub fn series_at_zero() {
    // The intake is the same as fleet-prepare's, and counts the same way.
    fleet_prepare::series::intake_series_at_zero();
    metrics::gauge!(m::API_WAITING_REQUESTS).increment(0.0);
}
