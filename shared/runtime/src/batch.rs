//! Requests that overlap in time go out together. A request that arrives while
//! `in_flight` batches are running waits for one of them to end and then leaves with
//! every request that arrived meanwhile (up to `max_batch`); an idle batcher runs a lone
//! request at once. Nothing ever waits for a batch to fill: batches grow only as load
//! makes requests overlap, which is when one statement for many saves the most.

use std::future::Future;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

type Job<T, R> = (T, oneshot::Sender<R>);

/// A handle on a batching task; clones share it. The task ends once every handle is
/// dropped and the batches it started have ended.
pub struct Batcher<T, R> {
    jobs: mpsc::UnboundedSender<Job<T, R>>,
}

impl<T, R> Clone for Batcher<T, R> {
    fn clone(&self) -> Self {
        Batcher {
            jobs: self.jobs.clone(),
        }
    }
}

impl<T: Send + 'static, R: Send + 'static> Batcher<T, R> {
    /// Spawns the task (on the current Tokio runtime) that hands batches of requests to
    /// `run`, which returns one result per request, in their order.
    pub fn spawn<F, Fut>(max_batch: usize, in_flight: usize, run: F) -> Batcher<T, R>
    where
        F: Fn(Vec<T>) -> Fut + Send + 'static,
        Fut: Future<Output = Vec<R>> + Send + 'static,
    {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(drive(queue, max_batch.max(1), in_flight.max(1), run));
        Batcher { jobs }
    }

    /// Sends `request` with the next batch and waits for its result. `None` when the
    /// batch gave no result for it (the task is gone: a panic in `run`, or the runtime
    /// shutting down).
    pub async fn submit(&self, request: T) -> Option<R> {
        let (reply, answer) = oneshot::channel();
        self.jobs.send((request, reply)).ok()?;
        answer.await.ok()
    }
}

async fn drive<T, R, F, Fut>(
    mut queue: mpsc::UnboundedReceiver<Job<T, R>>,
    max_batch: usize,
    in_flight: usize,
    run: F,
) where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(Vec<T>) -> Fut,
    Fut: Future<Output = Vec<R>> + Send + 'static,
{
    let mut running = JoinSet::new();
    loop {
        tokio::select! {
            Some(_) = running.join_next(), if !running.is_empty() => {}
            first = queue.recv(), if running.len() < in_flight => {
                let Some(first) = first else { break };
                let mut batch = vec![first];
                while batch.len() < max_batch {
                    match queue.try_recv() {
                        Ok(job) => batch.push(job),
                        Err(_) => break,
                    }
                }
                let (requests, replies): (Vec<T>, Vec<oneshot::Sender<R>>) = batch.into_iter().unzip();
                let results = run(requests);
                running.spawn(async move {
                    for (result, reply) in results.await.into_iter().zip(replies) {
                        // A requester that gave up no longer needs its answer.
                        let _ = reply.send(result);
                    }
                });
            }
        }
    }
    while running.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    /// A batcher whose batches take `pause` and are logged by size.
    fn logged(
        max_batch: usize,
        in_flight: usize,
        pause: Duration,
    ) -> (Batcher<u32, u32>, Arc<Mutex<Vec<usize>>>) {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let log = sizes.clone();
        let batcher = Batcher::spawn(max_batch, in_flight, move |batch: Vec<u32>| {
            log.lock().unwrap().push(batch.len());
            async move {
                tokio::time::sleep(pause).await;
                batch.into_iter().map(|n| n * 10).collect()
            }
        });
        (batcher, sizes)
    }

    #[tokio::test]
    async fn a_lone_request_goes_out_at_once() {
        let (batcher, sizes) = logged(64, 1, Duration::ZERO);
        let started = tokio::time::Instant::now();
        assert_eq!(batcher.submit(7).await, Some(70));
        assert!(started.elapsed() < Duration::from_millis(500));
        assert_eq!(*sizes.lock().unwrap(), vec![1]);
    }

    #[tokio::test]
    async fn requests_that_arrive_during_a_batch_leave_together_each_with_its_own_result() {
        let (batcher, sizes) = logged(64, 1, Duration::from_millis(200));
        let first = tokio::spawn({
            let b = batcher.clone();
            async move { b.submit(1).await }
        });
        // The first batch is running (it holds the only slot) while the others arrive.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let rest: Vec<_> = (2..=5)
            .map(|n| {
                let b = batcher.clone();
                tokio::spawn(async move { b.submit(n).await })
            })
            .collect();
        assert_eq!(first.await.unwrap(), Some(10));
        for (n, r) in (2..=5).zip(rest) {
            assert_eq!(r.await.unwrap(), Some(n * 10));
        }
        assert_eq!(*sizes.lock().unwrap(), vec![1, 4]);
    }

    #[tokio::test]
    async fn a_batch_never_exceeds_its_maximum() {
        let (batcher, sizes) = logged(3, 1, Duration::from_millis(100));
        let all: Vec<_> = (0..10)
            .map(|n| {
                let b = batcher.clone();
                tokio::spawn(async move { b.submit(n).await })
            })
            .collect();
        for (n, r) in (0..10).zip(all) {
            assert_eq!(r.await.unwrap(), Some(n * 10));
        }
        let sizes = sizes.lock().unwrap();
        assert_eq!(sizes.iter().sum::<usize>(), 10);
        assert!(sizes.iter().all(|&s| s <= 3), "{sizes:?}");
    }

    #[tokio::test]
    async fn a_request_without_a_result_gets_none() {
        let batcher: Batcher<u32, u32> =
            Batcher::spawn(8, 1, |_batch: Vec<u32>| async { Vec::new() });
        assert_eq!(batcher.submit(1).await, None);
    }
}
