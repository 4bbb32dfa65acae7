//! reconcile's own settings.

use std::time::Duration;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ReconcileSettings {
    /// Period of the sweeper (and of the fleet-wide gauges it computes).
    #[arg(long, env = "SWEEP_INTERVAL_MS", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(50..=600_000))]
    pub sweep_interval_ms: u64,
}

impl ReconcileSettings {
    pub fn sweep_interval(&self) -> Duration {
        Duration::from_millis(self.sweep_interval_ms)
    }
}

impl Default for ReconcileSettings {
    fn default() -> Self {
        Self { sweep_interval_ms: 1_000 }
    }
}
