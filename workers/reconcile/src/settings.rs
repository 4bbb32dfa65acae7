//! reconcile's own settings.

use std::time::Duration;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ReconcileSettings {
    /// Period of the sweeper (and of the fleet-wide gauges it computes).
    #[arg(long, env = "SWEEP_INTERVAL_MS", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(50..=600_000))]
    pub sweep_interval_ms: u64,

    /// Rows each sweep step takes at most.
    #[arg(long, env = "SWEEP_BATCH", default_value_t = 100, value_parser = clap::value_parser!(i64).range(1..=10_000))]
    pub sweep_batch: i64,

    /// How long an approved operation may wait to start before its execute doorbell is
    /// rung again (a lost message must not strand an approved payment).
    #[arg(long, env = "UNSTARTED_REDRIVE_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub unstarted_redrive_ms: u64,

    /// Failed lookups after which an unknown operation goes to an operator.
    #[arg(long, env = "ESCALATE_AFTER_LOOKUPS", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub escalate_after_lookups: u32,

    /// Pause between two lookups of the same operation when nothing settled it.
    #[arg(long, env = "LOOKUP_RECHECK_MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(10..))]
    pub lookup_recheck_ms: u64,

    /// Deadline given to an operation a lookup found still pending.
    #[arg(long, env = "ACCEPTED_DEADLINE_S", default_value_t = 3_600, value_parser = clap::value_parser!(u32).range(1..))]
    pub accepted_deadline_s: u32,

    /// A pending approval whose window closes within this many seconds counts as
    /// expiring soon (`fleet_approvals_expiring_soon`, the approvals alert).
    #[arg(long, env = "APPROVALS_EXPIRING_SOON_S", default_value_t = 900, value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub approvals_expiring_soon_s: u32,
}

impl ReconcileSettings {
    pub fn sweep_interval(&self) -> Duration {
        Duration::from_millis(self.sweep_interval_ms)
    }

    pub fn unstarted_redrive(&self) -> Duration {
        Duration::from_millis(self.unstarted_redrive_ms)
    }

    pub fn lookup_recheck(&self) -> Duration {
        Duration::from_millis(self.lookup_recheck_ms)
    }
}

impl Default for ReconcileSettings {
    fn default() -> Self {
        Self {
            sweep_interval_ms: 1_000,
            sweep_batch: 100,
            unstarted_redrive_ms: 30_000,
            escalate_after_lookups: 5,
            lookup_recheck_ms: 5_000,
            accepted_deadline_s: 3_600,
            approvals_expiring_soon_s: 900,
        }
    }
}
