//! Provider adapters over reqwest: one client shell ([`Client`]) that every provider
//! shares, and a mapping per provider ([`Mapping`]: `payments`, `crm`, `orders`, `esign`;
//! `stripe` for the payments provider spoken as Stripe)
//! that builds the one side-effecting request of each action it serves and offers the
//! read-only lookups reconcile needs. Sending a request becomes a
//! `fleet_core::outcome::CallResult` (what the transport saw; the action's catalogue
//! entry classifies it). [`Providers`] holds the clients by provider name, with what each
//! provider documents and guarantees (its settings, read from its spec in `fleet_core`).
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
pub mod client;
mod lookup;
pub mod path;
mod registry;
mod request;
mod transport;

/// Declares each mapping's module and lists its mapping in `MAPPINGS`, where the registry
/// finds a configured provider's client by the provider the mapping names
/// ([`Mapping::PROVIDER`]) and the dialect it speaks ([`Mapping::speaks`]): a mapping's
/// module line is all that adds it.
macro_rules! mappings {
    ($($module:ident :: $mapping:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every mapping, as the registry finds them.
        pub(crate) static MAPPINGS: &[registry::MappingEntry] =
            &[$(registry::MappingEntry::of::<$module::$mapping>()),*];
    };
}

mappings!(
    payments::Payments,
    crm::Crm,
    orders::Orders,
    esign::Esign,
    stripe::Stripe,
);

pub use adapter::{
    Intake, Operation, PayeeAnswer, PayerAnswer, RefundedAnswer, Request, Unbuildable,
};
pub use api::{Api, ConfigError, SendGate};
pub use client::{Client, Endpoint, Mapping};
pub use crm::{CrmClient, DealRequest};
pub use esign::{EnvelopeRequest, EsignClient};
/// What a provider guarantees: the capability guard's input (its defaults are in each
/// provider's spec, `fleet_core::catalogue::provider_spec`).
pub use fleet_core::catalogue::Capabilities;
pub use lookup::LookupError;
pub use orders::{OrdersClient, TransitionRequest};
pub use payments::{PaymentRequest, PaymentsClient, RefundRequest};
pub use registry::{Provider, ProviderConfig, ProviderConfigs, Providers};
pub use request::Encoding;
pub use stripe::StripeClient;

/// The series every provider's endpoint records, at zero (for each binary that calls
/// providers to register at its start): the 429s answered, the credentials refused, the
/// waits for a slot.
pub fn series_at_zero() {
    use fleet_runtime::metric_names as m;
    for provider in fleet_core::ProviderName::all() {
        let provider = provider.as_str();
        metrics::counter!(m::PROVIDER_THROTTLED_TOTAL, "provider" => provider).increment(0);
        metrics::counter!(m::PROVIDER_CREDENTIALS_REFUSED_TOTAL, "provider" => provider)
            .increment(0);
        // Registering a histogram renders it with empty buckets.
        let _ = metrics::histogram!(m::PROVIDER_SLOT_WAIT_SECONDS, "provider" => provider);
    }
}
