//! Requests that wait on an operation (`wait_for=decision|final`), served without
//! hammering Postgres: one task per process reads, every `API_WAIT_POLL_MS`, the state of
//! every operation somebody waits on, in ONE statement by primary key, and wakes the
//! waiters whose wait is over (`fleet_core::wait_is_over`). Nobody waiting costs nothing;
//! a thousand waiters cost one query per tick.
//!
//! Why not LISTEN/NOTIFY: a trigger that notifies on every change of `operations` would
//! make every committing transaction of every worker (claim, record, …) queue on
//! Postgres's notification lock, taxing the hot path for the benefit of a few waiters; and
//! a notification lost while the listening connection reconnects would leave a waiter
//! hanging until its timeout anyway. A tick of a quarter second is well inside what a
//! person's approval or a provider call takes.
//!
//! The number of waiting requests is bounded (`API_MAX_WAITERS`): one more is refused
//! (429) rather than queued.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fleet_core::{wait_is_over, WaitFor, WaitState};
use fleet_runtime::metric_names as m;
use fleet_store::Store;
use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

type Pending = HashMap<String, Vec<(WaitFor, oneshot::Sender<()>)>>;

pub struct Waiters {
    slots: Arc<Semaphore>,
    pending: Mutex<Pending>,
    registered: Notify,
}

/// A place among the waiters; dropping it frees the place.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        metrics::gauge!(m::API_WAITING_REQUESTS).decrement(1.0);
    }
}

impl Waiters {
    pub fn new(max_waiters: usize) -> Waiters {
        Waiters {
            slots: Arc::new(Semaphore::new(max_waiters)),
            pending: Mutex::new(HashMap::new()),
            registered: Notify::new(),
        }
    }

    /// A place to wait in, or `None` when every place is taken.
    pub fn slot(&self) -> Option<Slot> {
        let permit = self.slots.clone().try_acquire_owned().ok()?;
        metrics::gauge!(m::API_WAITING_REQUESTS).increment(1.0);
        Some(Slot { _permit: permit })
    }

    /// Resolves once `operation_id`'s wait for `wait_for` is over (as seen by the poller).
    /// Dropping the receiver (the request timed out) withdraws the wait.
    pub fn register(&self, operation_id: &str, wait_for: WaitFor) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending)
            .entry(operation_id.to_owned())
            .or_default()
            .push((wait_for, tx));
        self.registered.notify_one();
        rx
    }

    /// The ids somebody still waits on; withdrawn waits are dropped here.
    fn waited_on(&self) -> Vec<String> {
        let mut pending = lock(&self.pending);
        pending.retain(|_, waits| {
            waits.retain(|(_, tx)| !tx.is_closed());
            !waits.is_empty()
        });
        pending.keys().cloned().collect()
    }

    /// Polls until `shutdown` (see the module docs).
    pub async fn run(self: Arc<Self>, store: Store, every: Duration, shutdown: CancellationToken) {
        // Logged when reads start failing and when they recover, not at every tick.
        let mut failing = false;
        loop {
            let ids = self.waited_on();
            if ids.is_empty() {
                tokio::select! {
                    _ = self.registered.notified() => continue,
                    _ = shutdown.cancelled() => return,
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.cancelled() => return,
            }
            match store.wait_states(&ids).await {
                Ok(states) => {
                    if std::mem::take(&mut failing) {
                        tracing::info!("the waited-on operations can be read again");
                    }
                    self.wake(states);
                }
                // Waiters keep waiting (their own timeout bounds them); the next tick retries.
                Err(e) => {
                    if !std::mem::replace(&mut failing, true) {
                        tracing::warn!(error = %e, waiting = ids.len(), "could not read the waited-on operations; retrying at every tick");
                    }
                }
            }
        }
    }

    /// Wakes every waiter whose wait these states end.
    fn wake(&self, states: Vec<(String, WaitState)>) {
        let mut pending = lock(&self.pending);
        for (id, state) in states {
            let Some(waits) = pending.get_mut(&id) else {
                continue;
            };
            let (over, waiting): (Vec<_>, Vec<_>) = waits
                .drain(..)
                .partition(|(wait_for, _)| wait_is_over(*wait_for, state));
            *waits = waiting;
            for (_, tx) in over {
                // A waiter that already gave up is simply gone.
                let _ = tx.send(());
            }
        }
    }
}

fn lock(m: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    // A panic while holding the lock cannot leave the map inconsistent (every update is a
    // single call), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_and_freed_on_drop() {
        let waiters = Waiters::new(2);
        let a = waiters.slot().expect("first");
        let _b = waiters.slot().expect("second");
        assert!(waiters.slot().is_none(), "a third waiter is refused");
        drop(a);
        assert!(waiters.slot().is_some(), "a freed place is reused");
    }

    #[test]
    fn only_the_waiters_whose_wait_is_over_are_woken() {
        use fleet_core::{ApprovalStatus, Status};
        let waiters = Waiters::new(4);
        let mut decision = waiters.register("op_a", WaitFor::Decision);
        let mut done = waiters.register("op_a", WaitFor::Final);
        let approved = WaitState {
            status: Status::InProgress,
            approval: ApprovalStatus::Approved,
            escalated: false,
        };
        waiters.wake(vec![("op_a".to_owned(), approved)]);
        assert!(decision.try_recv().is_ok(), "the decision is known");
        assert!(done.try_recv().is_err(), "the operation is not final yet");
        assert_eq!(waiters.waited_on(), vec!["op_a".to_owned()]);
        let succeeded = WaitState {
            status: Status::Succeeded,
            ..approved
        };
        waiters.wake(vec![("op_a".to_owned(), succeeded)]);
        assert!(done.try_recv().is_ok());
        assert!(waiters.waited_on().is_empty());
    }

    #[test]
    fn a_withdrawn_wait_is_forgotten() {
        let waiters = Waiters::new(4);
        let kept = waiters.register("op_a", WaitFor::Final);
        let gone = waiters.register("op_b", WaitFor::Decision);
        drop(gone);
        assert_eq!(waiters.waited_on(), vec!["op_a".to_owned()]);
        drop(kept);
        assert!(waiters.waited_on().is_empty());
    }
}
