//! Waiting on a condition with a deadline: never a bare sleep.

use std::future::Future;
use std::time::Duration;

use tokio::time::{sleep, Instant};

pub const DEADLINE: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(25);

/// Polls `probe` until it yields `Some`, failing the test after `DEADLINE`.
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_within(DEADLINE, what, probe).await
}

/// [`eventually`] with a deadline of its own, for tests whose promise is a time bound.
pub async fn eventually_within<T, F, Fut>(within: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        sleep(POLL).await;
    }
}
