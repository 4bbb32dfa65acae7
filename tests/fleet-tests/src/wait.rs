//! Waiting on a condition with a deadline: never a bare sleep.

use std::future::Future;
use std::time::Duration;

use tokio::time::{sleep, Instant};

pub const DEADLINE: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(25);

/// Polls `probe` until it yields `Some`, failing the test after `DEADLINE`.
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {DEADLINE:?} waiting for {what}");
        sleep(POLL).await;
    }
}
