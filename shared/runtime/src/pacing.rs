//! Where a request to a rate-limited provider waits for its turn. The provider adapters
//! (`fleet-providers`) ask a [`Pacer`] for a slot before every request they send and tell
//! it of every 429; the one the components that call providers use is the schedule shared
//! in Postgres (`fleet_store::ProviderSchedule`). Defined here, where both crates can
//! reach it, so that neither depends on the other.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A future a [`Pacer`] returns (pacers are used as trait objects).
pub type PaceFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One provider's pace.
pub trait Pacer: Send + Sync + fmt::Debug {
    /// Completes when one more request may be sent to the provider.
    fn slot(&self) -> PaceFuture<'_>;

    /// The provider refused a request for its rate (429) and asked for `retry_after`:
    /// no request of any replica should reach it before that has passed.
    fn throttled(&self, retry_after: Duration) -> PaceFuture<'_>;
}
