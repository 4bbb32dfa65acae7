//! Provider adapters over reqwest. Each adapter builds the one side-effecting request of
//! the actions its provider serves, turns sending it into a
//! `fleet_core::outcome::CallResult` (what the transport saw; the action's catalogue
//! entry classifies it) and offers the read-only lookups reconcile needs. [`Providers`]
//! holds them by provider name, with what each provider documents and guarantees.
//!
//! Rule for every adapter: a side-effecting request is sent once per call. No automatic
//! retry and no redirect is ever followed; deciding to call again belongs to the state
//! machine, with the same idempotency key, after reconcile proved it safe.
//!
//! Metrics (`fleet_provider_calls_total`, `fleet_provider_call_duration_seconds`) are
//! recorded by the caller, which knows the classified outcome; the adapters' endpoint
//! records what only it sees, the 429s and the waits for a slot ([`series_at_zero`]).

pub mod adapter;
mod api;
pub mod capabilities;
pub mod crm;
pub mod esign;
mod lookup;
pub mod orders;
pub mod path;
pub mod payments;
mod registry;
mod request;
mod transport;

pub use adapter::{Adapter, Operation, PayeeAnswer, Request, Unbuildable};
pub use api::{Api, ConfigError};
pub use capabilities::Capabilities;
pub use crm::{CrmClient, CrmConfig, DealRequest};
pub use esign::{EnvelopeRequest, EsignClient};
pub use lookup::LookupError;
pub use orders::{OrdersClient, TransitionRequest};
pub use payments::{PaymentRequest, PaymentsClient, PaymentsConfig, RefundRequest};
pub use registry::{Provider, ProviderConfig, ProviderConfigs, Providers};

/// The series every provider's endpoint records, at zero (for each binary that calls
/// providers to register at its start): the 429s answered, the waits for a slot.
pub fn series_at_zero() {
    use fleet_runtime::metric_names as m;
    for provider in fleet_core::ProviderName::ALL {
        let provider = provider.as_str();
        metrics::counter!(m::PROVIDER_THROTTLED_TOTAL, "provider" => provider).increment(0);
        // Registering a histogram renders it with empty buckets.
        let _ = metrics::histogram!(m::PROVIDER_SLOT_WAIT_SECONDS, "provider" => provider);
    }
}
