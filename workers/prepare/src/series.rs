//! The series fleet-prepare owns, created at zero when the process starts: the intake's
//! (`fleet_intake::series`) and those of its consumer of `intents.prepare`, so that
//! dashboards and alerts see every outcome from the first scrape.

use fleet_broker::Queue;
use fleet_intake::series::{intake_series_at_zero, REFUSAL_REASONS};

/// Everything fleet-prepare owns: the intake's series and those of its consumer.
pub fn series_at_zero() {
    intake_series_at_zero();
    fleet_broker::consumer_series_at_zero(Queue::IntentsPrepare, REFUSAL_REASONS);
}
