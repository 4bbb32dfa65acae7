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
//! The number of waiting requests is bounded (`API_MAX_WAITERS`), and shared
//! (`API_MAX_WAITERS_PER_TENANT`, `API_MAX_WAITERS_PER_PRINCIPAL`, see
//! [`fleet_core::wait_shares`]): a waiter over its share, or past the whole, is refused
//! (429) rather than queued, and the others still get theirs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fleet_core::wait_shares::{ShareCaps, ShareRefusal, WaitShares};
use fleet_core::{wait_is_over, OpKey, OpRef, WaitFor, WaitState};
use fleet_runtime::metric_names as m;
use fleet_store::ApiStore;
use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;

type Pending = HashMap<OpKey, Vec<(WaitFor, oneshot::Sender<()>)>>;

pub struct Waiters {
    shares: Arc<Mutex<WaitShares>>,
    pending: Mutex<Pending>,
    registered: Notify,
}

/// A place among the waiters; dropping it frees the place.
pub struct Slot {
    shares: Arc<Mutex<WaitShares>>,
    principal: String,
    tenant: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.shares).give_back(&self.principal, &self.tenant);
        metrics::gauge!(m::API_WAITING_REQUESTS).decrement(1.0);
    }
}

impl Waiters {
    pub fn new(caps: ShareCaps) -> Waiters {
        Waiters {
            shares: Arc::new(Mutex::new(WaitShares::new(caps))),
            pending: Mutex::new(HashMap::new()),
            registered: Notify::new(),
        }
    }

    /// A place for `principal` to wait on an operation of `tenant`, unless its share or
    /// the whole is taken.
    pub fn slot(&self, principal: &str, tenant: &str) -> Result<Slot, ShareRefusal> {
        lock(&self.shares).take(principal, tenant)?;
        metrics::gauge!(m::API_WAITING_REQUESTS).increment(1.0);
        Ok(Slot {
            shares: self.shares.clone(),
            principal: principal.to_owned(),
            tenant: tenant.to_owned(),
        })
    }

    /// Resolves once `op`'s wait for `wait_for` is over (as seen by the poller).
    /// Dropping the receiver (the request timed out) withdraws the wait.
    pub fn register(&self, op: OpRef<'_>, wait_for: WaitFor) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending)
            .entry(op.to_key())
            .or_default()
            .push((wait_for, tx));
        self.registered.notify_one();
        rx
    }

    /// The operations somebody still waits on; withdrawn waits are dropped here.
    fn waited_on(&self) -> Vec<OpKey> {
        let mut pending = lock(&self.pending);
        pending.retain(|_, waits| {
            waits.retain(|(_, tx)| !tx.is_closed());
            !waits.is_empty()
        });
        pending.keys().cloned().collect()
    }

    /// Polls until `shutdown` (see the module docs).
    pub async fn run(
        self: Arc<Self>,
        store: ApiStore,
        every: Duration,
        shutdown: CancellationToken,
    ) {
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
    fn wake(&self, states: Vec<(OpKey, WaitState)>) {
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the maps inconsistent (every update is a
    // single call), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(total: usize) -> ShareCaps {
        ShareCaps::new(total, total, total).unwrap()
    }

    #[test]
    fn places_are_bounded_and_freed_on_drop() {
        let waiters = Waiters::new(caps(2));
        let a = waiters.slot("p", "t").expect("first");
        let _b = waiters.slot("p", "t").expect("second");
        assert!(waiters.slot("q", "u").is_err(), "a third waiter is refused");
        drop(a);
        assert!(waiters.slot("q", "u").is_ok(), "a freed place is reused");
    }

    #[test]
    fn a_principal_over_its_share_leaves_places_for_the_others() {
        let waiters = Waiters::new(ShareCaps::new(4, 4, 1).unwrap());
        let _held = waiters.slot("greedy", "t1").unwrap();
        assert_eq!(
            waiters.slot("greedy", "t1").err(),
            Some(ShareRefusal::Principal)
        );
        assert!(waiters.slot("other", "t2").is_ok());
    }

    #[test]
    fn only_the_waiters_whose_wait_is_over_are_woken() {
        use fleet_core::{ApprovalStatus, Status};
        let waiters = Waiters::new(caps(4));
        let mut decision = waiters.register(OpRef::new("t1", "op_a"), WaitFor::Decision);
        let mut done = waiters.register(OpRef::new("t1", "op_a"), WaitFor::Final);
        let approved = WaitState {
            status: Status::InProgress,
            approval: ApprovalStatus::Approved,
            escalated: false,
        };
        waiters.wake(vec![(OpKey::new("t1", "op_a"), approved)]);
        assert!(decision.try_recv().is_ok(), "the decision is known");
        assert!(done.try_recv().is_err(), "the operation is not final yet");
        assert_eq!(waiters.waited_on(), vec![OpKey::new("t1", "op_a")]);
        let succeeded = WaitState {
            status: Status::Succeeded,
            ..approved
        };
        waiters.wake(vec![(OpKey::new("t1", "op_a"), succeeded)]);
        assert!(done.try_recv().is_ok());
        assert!(waiters.waited_on().is_empty());
    }

    #[test]
    fn one_id_in_two_tenants_is_two_waits() {
        use fleet_core::{ApprovalStatus, Status};
        let waiters = Waiters::new(caps(4));
        let mut mine = waiters.register(OpRef::new("t1", "op_a"), WaitFor::Final);
        let mut theirs = waiters.register(OpRef::new("t2", "op_a"), WaitFor::Final);
        let succeeded = WaitState {
            status: Status::Succeeded,
            approval: ApprovalStatus::Approved,
            escalated: false,
        };
        waiters.wake(vec![(OpKey::new("t1", "op_a"), succeeded)]);
        assert!(mine.try_recv().is_ok());
        assert!(
            theirs.try_recv().is_err(),
            "another tenant's operation is not over"
        );
        assert_eq!(waiters.waited_on(), vec![OpKey::new("t2", "op_a")]);
    }

    #[test]
    fn a_withdrawn_wait_is_forgotten() {
        let waiters = Waiters::new(caps(4));
        let kept = waiters.register(OpRef::new("t1", "op_a"), WaitFor::Final);
        let gone = waiters.register(OpRef::new("t1", "op_b"), WaitFor::Decision);
        drop(gone);
        assert_eq!(waiters.waited_on(), vec![OpKey::new("t1", "op_a")]);
        drop(kept);
        assert!(waiters.waited_on().is_empty());
    }
}
