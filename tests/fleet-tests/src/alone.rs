//! Tests that must have the machine to themselves. The fleet's tests are one binary, so
//! tests of every module run side by side, as many at once as the machine has cores. A
//! flood of 2,000 sockets, a soak that SIGKILLs workers at random or a benchmark that
//! starts whole fleets would then share the cores with another test, and bounds that
//! hold on an idle machine (a p99 under a second, a header timeout, a deadline) would
//! fail for the neighbour's sake, or make the neighbour fail.
//!
//! Such a test calls [`alone`] (or [`alone_blocking`]) before anything else: it waits
//! until no other test holds a fleet, and until its guard is dropped no other test starts
//! one. Every [`TestFleet`](crate::TestFleet) holds a share of the process while it lives.
//! The lock is fair: a test waiting to be alone is not starved by fleets started after
//! it asked.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static PROCESS: RwLock<()> = RwLock::const_new(());

thread_local! {
    /// What the test on this thread holds. A test's fleets are started on its own thread
    /// (the test body runs there, whatever the runtime's flavour), so a second fleet of
    /// the same test shares the first one's hold: asking the fair lock again while
    /// holding it would wait behind a test waiting to be alone, which waits for us.
    static HELD: RefCell<Weak<Hold>> = const { RefCell::new(Weak::new()) };
}

/// A share of the process, or all of it: released when dropped.
#[derive(Debug)]
pub(crate) enum Hold {
    Shared {
        _guard: RwLockReadGuard<'static, ()>,
    },
    Alone {
        _guard: RwLockWriteGuard<'static, ()>,
    },
}

/// Held by a test that runs alone; the others wait until it is dropped.
#[derive(Debug)]
#[must_use = "the test runs alone only while the guard lives"]
pub struct Alone {
    _hold: Arc<Hold>,
}

fn held() -> Option<Arc<Hold>> {
    HELD.with(|h| h.borrow().upgrade())
}

fn hold(h: Hold) -> Arc<Hold> {
    let h = Arc::new(h);
    HELD.with(|slot| *slot.borrow_mut() = Arc::downgrade(&h));
    h
}

fn nothing_held_yet() {
    assert!(
        held().is_none(),
        "ask to run alone before starting a fleet: a test holding a share would wait for itself"
    );
}

/// Waits until no other test holds a fleet; none starts one while the guard lives.
pub async fn alone() -> Alone {
    nothing_held_yet();
    Alone {
        _hold: hold(Hold::Alone {
            _guard: PROCESS.write().await,
        }),
    }
}

/// [`alone`] for a test without a runtime.
pub fn alone_blocking() -> Alone {
    nothing_held_yet();
    Alone {
        _hold: hold(Hold::Alone {
            _guard: PROCESS.blocking_write(),
        }),
    }
}

/// The hold a fleet keeps while it lives: its test's own if it has one (alone, or the
/// share of an earlier fleet), else a share of the process.
pub(crate) async fn share() -> Arc<Hold> {
    match held() {
        Some(h) => h,
        None => hold(Hold::Shared {
            _guard: PROCESS.read().await,
        }),
    }
}
