//! The clock of a job that runs every so often until shutdown (a sweep, the gauges): the
//! first tick is at once, and a run that overran its interval is followed by the next one
//! a full interval later rather than by a burst of catch-up ticks.

use std::time::Duration;

use tokio::time::{interval, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

pub struct Ticker {
    interval: Interval,
    shutdown: CancellationToken,
}

impl Ticker {
    pub fn new(every: Duration, shutdown: CancellationToken) -> Self {
        let mut interval = interval(every);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Ticker { interval, shutdown }
    }

    /// Waits for the next tick: `true` when it is time to run, `false` once shutdown is
    /// asked.
    pub async fn tick(&mut self) -> bool {
        tokio::select! {
            _ = self.shutdown.cancelled() => false,
            _ = self.interval.tick() => true,
        }
    }
}
