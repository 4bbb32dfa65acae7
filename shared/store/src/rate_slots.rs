//! Slots of a provider's shared schedule as this process holds them, whoever reserved
//! them: execute's and reconcile's calls (`crate::provider_rates`) and the intake's payee
//! lookups (`crate::intake_rates`) read the database's answer into the same slots.

use std::time::Duration;

use tokio::time::Instant;

/// A slot as this process holds it: when it opens, and until when the provider was
/// paused as the database said it then.
pub(crate) type Slot = Result<(Instant, Instant), String>;

/// A duration the database answered in milliseconds (never negative).
pub(crate) fn millis(ms: f64) -> Duration {
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

/// The slots a reservation answered, as this process holds them.
pub(crate) fn held(waits: Vec<Duration>, paused: Duration) -> Vec<Slot> {
    let now = Instant::now();
    let paused_until = now + paused;
    waits
        .into_iter()
        .map(|wait| Ok((now + wait, paused_until)))
        .collect()
}
