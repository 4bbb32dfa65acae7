//! What every handler shares.

use std::sync::Arc;

use fleet_prepare::ProviderCapabilities;
use fleet_store::Store;
use tokio_util::sync::CancellationToken;

use crate::console::Console;
use crate::waiters::Waiters;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// What the configured providers guarantee: the capability guard's input, as prepare's.
    pub providers: ProviderCapabilities,
    pub waiters: Arc<Waiters>,
    /// Cancelled at SIGTERM: waiting requests answer at once with the current view.
    pub shutdown: CancellationToken,
    /// The console for people, when an OpenID Connect issuer is configured.
    pub console: Option<Arc<Console>>,
}
