//! What the worker is built from: its store, broker, providers and settings.

use std::sync::Arc;

use fleet_broker::{BrokerConfig, BrokerHealth, Publisher};
use fleet_providers::Providers;
use fleet_store::ExecuteStore;

use crate::settings::ExecuteSettings;

/// Everything `run` needs, built by `main` (or by a test).
pub struct ExecuteDeps {
    pub store: ExecuteStore,
    pub broker: BrokerConfig,
    pub health: BrokerHealth,
    /// Rings `operations.reconcile` after an ambiguous outcome.
    pub publisher: Publisher,
    /// Every provider, with what it documents: a searched create waits for a provider's
    /// search lag and maximum request time after an earlier uncertain attempt, and no
    /// request is sent on a key the provider may have forgotten.
    pub providers: Arc<Providers>,
    pub settings: ExecuteSettings,
    pub concurrency: usize,
}
