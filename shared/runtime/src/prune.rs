//! One run of a retention job: old rows are deleted in bounded batches, so that one run
//! never holds the database for long and replicas running at the same time share the
//! work (each batch skips the rows another one holds).

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The pause between two batches of one run, leaving the table to other work.
const PAUSE_BETWEEN_BATCHES: Duration = Duration::from_millis(50);

/// Calls `prune_batch` (which deletes at most `batch` rows and says how many) until a
/// batch comes back short, `max_batches` ran, or `shutdown` is asked. Answers how many rows
/// were deleted, and the error of a batch that failed, which ends the run (the next run
/// retries).
pub async fn prune_in_batches<E, F>(
    batch: i64,
    max_batches: u32,
    shutdown: &CancellationToken,
    mut prune_batch: impl FnMut() -> F,
) -> (u64, Option<E>)
where
    F: Future<Output = Result<u64, E>>,
{
    let mut deleted = 0;
    for _ in 0..max_batches {
        match prune_batch().await {
            Ok(n) => {
                deleted += n;
                if n < batch.unsigned_abs() || shutdown.is_cancelled() {
                    break;
                }
            }
            Err(e) => return (deleted, Some(e)),
        }
        tokio::time::sleep(PAUSE_BETWEEN_BATCHES).await;
    }
    (deleted, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_ends_at_a_short_batch_at_the_cap_or_at_a_failure() {
        let shutdown = CancellationToken::new();
        let mut left = [10, 10, 3, 10].into_iter();
        let short = prune_in_batches(10, 100, &shutdown, || {
            let n = left.next().unwrap();
            async move { Ok::<u64, ()>(n) }
        })
        .await;
        assert_eq!(short, (23, None));
        let capped = prune_in_batches(10, 2, &shutdown, || async { Ok::<u64, ()>(10) }).await;
        assert_eq!(capped, (20, None));
        let mut answers = [Ok(10), Err("refused"), Ok(10)].into_iter();
        let failed = prune_in_batches(10, 100, &shutdown, || {
            let answer = answers.next().unwrap();
            async move { answer }
        })
        .await;
        assert_eq!(failed, (10, Some("refused")));
    }

    #[tokio::test]
    async fn shutdown_ends_a_run_after_the_batch_in_hand() {
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let run = prune_in_batches(10, 100, &shutdown, || async { Ok::<u64, ()>(10) }).await;
        assert_eq!(run, (10, None));
    }
}
