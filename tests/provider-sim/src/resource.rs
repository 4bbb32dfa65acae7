//! What differs between the kinds of objects the provider creates (payments, refunds);
//! everything else (idempotency, faults, search, logging) is shared by `create.rs` and
//! `reads.rs`, written once for any `Resource`.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

use crate::api_error::ApiError;
use crate::idempotency::IdempotencyStore;
use crate::ledger::{Ledger, ObjectStatus, Record};
use crate::route::Route;
use crate::state::{App, SimState};

/// What the shared create flow decided about a new object before the resource fills it.
#[derive(Clone, Copy, Debug)]
pub struct NewObject {
    pub status: ObjectStatus,
    pub created_at: DateTime<Utc>,
}

pub trait Resource: Record + Send + Sync + 'static {
    const CREATE: Route;
    const SEARCH: Route;
    const GET: Route;

    /// The body member that carries the caller's reference, also the search's query
    /// parameter (`reference`, an envelope's `external_ref`).
    const REFERENCE: &'static str = "reference";

    /// The validated body of a create request.
    type Params: Send + 'static;

    /// Where this resource's idempotency keys are kept (and for how long).
    fn keys(state: &mut SimState) -> &mut IdempotencyStore {
        &mut state.keys
    }

    /// How long a new object stays invisible to the search.
    fn search_lag(app: &App) -> TimeDelta {
        app.search_lag()
    }

    /// Called once an object is committed (the lock is held): what the provider starts
    /// doing on its own afterwards.
    fn committed(_app: &App, _object: &Self) {}

    fn ledger(state: &SimState) -> &Ledger<Self>;
    fn ledger_mut(state: &mut SimState) -> &mut Ledger<Self>;

    /// Checks a create body. An error here is a 400 that is NOT saved under the key.
    fn validate(body: &Value, state: &SimState) -> Result<Self::Params, ApiError>;

    /// The business decision on a validated request: the object to create, or a
    /// rejection. Either is saved under the key; only an object is an effect.
    fn execute(params: Self::Params, state: &SimState, new: NewObject) -> Result<Self, ApiError>;
}
