//! How many requests fleet-api works on at once (`API_MAX_CONCURRENT_REQUESTS`): each
//! request takes a slot before its handler runs and waits at most
//! `API_REQUEST_QUEUE_MS` for one (then 503 `busy`), so a burst queues briefly instead of
//! piling onto the database pool. A request that waits on an operation gives its slot
//! back while it waits: waiting is bounded by the wait slots ([`crate::waiters`]), and a
//! held long-poll must not keep ordinary requests out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use fleet_runtime::{RequestSlot, RequestSlots};
use tokio::time::Instant;

use crate::error::ApiError;

/// The slots and how long a request may wait for one.
#[derive(Debug, Clone)]
pub struct Slots {
    pub slots: RequestSlots,
    pub queue_timeout: Duration,
}

/// The slot of the request in flight, in its extensions; [`HeldSlot::release`] gives it
/// back early.
#[derive(Debug, Clone, Default)]
pub struct HeldSlot(Arc<Mutex<Option<RequestSlot>>>);

impl HeldSlot {
    /// Frees the slot now rather than at the end of the request.
    pub fn release(&self) {
        drop(self.0.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// The middleware: a slot for the request, or 503 `busy`.
pub async fn take_slot(State(slots): State<Slots>, mut request: Request, next: Next) -> Response {
    let deadline = Instant::now() + slots.queue_timeout;
    let Some(slot) = slots.slots.take_by(deadline).await else {
        return ApiError::Busy.into_response();
    };
    let held = HeldSlot(Arc::new(Mutex::new(Some(slot))));
    request.extensions_mut().insert(held.clone());
    let response = next.run(request).await;
    // The handler is done: the slot goes back with `held` (a streamed body is not ours).
    held.release();
    response
}
