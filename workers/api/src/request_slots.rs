//! How many requests fleet-api works on at once (`API_MAX_CONCURRENT_REQUESTS`), and how
//! many of them one client may hold (`API_MAX_CONCURRENT_REQUESTS_PER_PRINCIPAL`): each
//! request takes a slot of its client's share, then one of the whole, before its handler
//! runs, and waits at most `API_REQUEST_QUEUE_MS` for both (then 503 `busy`), so a burst
//! queues briefly instead of piling onto the database pool, and a client that holds its
//! whole share (with slow bodies, say) leaves the other slots to everybody else.
//!
//! A client is the principal the request was authenticated as ([`crate::auth`]), else the
//! source address of a request without a valid credential. The slot is taken after
//! authentication and before the body is read, so it is held while the body arrives
//! (bounded by the body deadlines, [`crate::body_deadline`]).
//!
//! A request that waits on an operation gives its slot back while it waits: waiting is
//! bounded by the wait slots ([`crate::waiters`]), and a held long-poll must not keep
//! ordinary requests out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::auth::Identified;
use crate::error::ApiError;

/// Whose share a request's slot counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SlotKey {
    Principal(String),
    /// A request without a valid credential, by its source address.
    Address(IpAddr),
    /// Neither is known (a request that did not come over a connection).
    Unknown,
}

impl SlotKey {
    pub fn of(identified: Option<&Identified>) -> SlotKey {
        let Some(identified) = identified else {
            return SlotKey::Unknown;
        };
        match (identified.principal(), identified.from) {
            (Some(p), _) => SlotKey::Principal(p.name.clone()),
            (None, Some(ip)) => SlotKey::Address(ip),
            (None, None) => SlotKey::Unknown,
        }
    }
}

/// The slots, each client's share of them, and how long a request may wait for one.
#[derive(Debug, Clone)]
pub struct Slots {
    all: Arc<Semaphore>,
    shares: Arc<Shares>,
    queue_timeout: Duration,
}

/// The share of each client with a request in flight or waiting; a client with none is
/// forgotten.
#[derive(Debug)]
struct Shares {
    size: usize,
    held: Mutex<HashMap<SlotKey, Arc<Semaphore>>>,
}

impl Shares {
    fn of(&self, key: &SlotKey) -> Arc<Semaphore> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.entry(key.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.size)))
            .clone()
    }

    /// Forgets `key`'s share when nothing holds or waits for it: only the map refers to
    /// it then (a waiter holds a clone, a slot holds a permit that holds one).
    fn forget_if_idle(&self, key: &SlotKey) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.get(key).is_some_and(|s| Arc::strong_count(s) == 1) {
            held.remove(key);
        }
    }
}

/// One request's slot: a permit of its client's share and one of the whole. Dropping it
/// frees both.
#[derive(Debug)]
pub struct Slot {
    share: Option<OwnedSemaphorePermit>,
    whole: Option<OwnedSemaphorePermit>,
    key: SlotKey,
    shares: Arc<Shares>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.whole.take());
        drop(self.share.take());
        self.shares.forget_if_idle(&self.key);
    }
}

impl Slots {
    /// `total` slots, of which one client holds at most `share` (cut to `total`).
    pub fn new(total: usize, share: usize, queue_timeout: Duration) -> Slots {
        Slots {
            all: Arc::new(Semaphore::new(total)),
            shares: Arc::new(Shares {
                size: share.clamp(1, total.max(1)),
                held: Mutex::new(HashMap::new()),
            }),
            queue_timeout,
        }
    }

    /// A slot for `key`, or `None` when its share or the whole stayed taken until
    /// `deadline`. The share comes first: a client waiting beyond its share waits on its
    /// own, and holds none of the whole meanwhile.
    pub async fn take_by(&self, key: SlotKey, deadline: Instant) -> Option<Slot> {
        // The share's only other reference is in the future, gone once it is answered: a
        // `slot` dropped below finds the share idle if it is.
        let permit = tokio::time::timeout_at(deadline, self.shares.of(&key).acquire_owned()).await;
        let mut slot = Slot {
            share: permit.ok().and_then(Result::ok),
            whole: None,
            key,
            shares: self.shares.clone(),
        };
        slot.share.as_ref()?;
        slot.whole = tokio::time::timeout_at(deadline, self.all.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok);
        slot.whole.as_ref()?;
        Some(slot)
    }

    #[cfg(test)]
    fn clients(&self) -> usize {
        self.shares.held.lock().unwrap().len()
    }
}

/// The slot of the request in flight, in its extensions; [`HeldSlot::release`] gives it
/// back early.
#[derive(Debug, Clone, Default)]
pub struct HeldSlot(Arc<Mutex<Option<Slot>>>);

impl HeldSlot {
    /// Frees the slot now rather than at the end of the request.
    pub fn release(&self) {
        drop(self.0.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// The middleware: a slot of the client's share for the request, or 503 `busy`. Runs
/// after [`crate::auth::identify`], which says who the client is.
pub async fn take_slot(State(slots): State<Slots>, mut request: Request, next: Next) -> Response {
    let deadline = Instant::now() + slots.queue_timeout;
    let key = SlotKey::of(request.extensions().get::<Identified>());
    let Some(slot) = slots.take_by(key, deadline).await else {
        return ApiError::Busy.into_response();
    };
    let held = HeldSlot(Arc::new(Mutex::new(Some(slot))));
    request.extensions_mut().insert(held.clone());
    let response = next.run(request).await;
    // The handler is done: the slot goes back with `held` (a streamed body is not ours).
    held.release();
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soon() -> Instant {
        Instant::now() + Duration::from_millis(50)
    }

    fn principal(name: &str) -> SlotKey {
        SlotKey::Principal(name.to_owned())
    }

    #[tokio::test]
    async fn one_client_holds_at_most_its_share_and_others_still_get_slots() {
        let slots = Slots::new(4, 2, Duration::from_millis(50));
        let mut greedy = Vec::new();
        for _ in 0..2 {
            let slot = slots.take_by(principal("greedy"), soon()).await;
            greedy.push(slot.expect("within its share"));
        }
        assert!(
            slots.take_by(principal("greedy"), soon()).await.is_none(),
            "beyond its share"
        );
        let other = slots.take_by(principal("other"), soon()).await;
        let anonymous = slots
            .take_by(SlotKey::Address([10, 0, 0, 1].into()), soon())
            .await;
        assert!(other.is_some() && anonymous.is_some());
        assert!(
            slots.take_by(principal("third"), soon()).await.is_none(),
            "every slot is taken"
        );
        drop(greedy);
        assert!(slots.take_by(principal("greedy"), soon()).await.is_some());
    }

    #[tokio::test]
    async fn a_client_with_nothing_in_flight_is_forgotten() {
        let slots = Slots::new(4, 2, Duration::from_millis(50));
        let held = slots.take_by(principal("a"), soon()).await.unwrap();
        assert_eq!(slots.clients(), 1);
        drop(held);
        assert_eq!(slots.clients(), 0);
        assert!(slots.take_by(principal("a"), soon()).await.is_some());
        assert_eq!(slots.clients(), 0);
    }

    #[tokio::test]
    async fn a_client_that_found_no_slot_is_forgotten_too() {
        let slots = Slots::new(1, 1, Duration::from_millis(50));
        let held = slots.take_by(principal("a"), soon()).await.unwrap();
        assert!(slots.take_by(principal("a"), soon()).await.is_none());
        assert!(slots.take_by(principal("b"), soon()).await.is_none());
        assert_eq!(slots.clients(), 1);
        drop(held);
        assert_eq!(slots.clients(), 0);
    }

    #[test]
    fn a_share_above_the_whole_is_cut_to_it() {
        let slots = Slots::new(3, 10, Duration::from_millis(50));
        assert_eq!(slots.shares.size, 3);
    }
}
