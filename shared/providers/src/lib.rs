//! Provider adapters over reqwest. Each adapter turns one side-effecting call into a
//! `fleet_core::outcome::CallResult` (what the transport saw; the domain classifies it)
//! and offers the read-only lookups reconcile needs.
//!
//! Rule for every adapter: a side-effecting request is sent once per call. No automatic
//! retry and no redirect is ever followed; deciding to call again belongs to the state
//! machine, with the same idempotency key, after reconcile proved it safe.
//!
//! Metrics (`fleet_provider_calls_total`, `fleet_provider_call_duration_seconds`) are
//! recorded by the caller, which knows the classified outcome.

mod api;
pub mod capabilities;
pub mod crm;
mod lookup;
pub mod payments;
mod transport;

pub use capabilities::Capabilities;
pub use lookup::LookupError;
pub use api::ConfigError;
pub use crm::{CrmClient, CrmConfig, DealRequest};
pub use payments::{PaymentRequest, PaymentsClient, PaymentsConfig, RefundRequest};
