//! The reference provider simulator: payments, the CRM, orders and e-signatures, with
//! their webhooks.
//!
//! A real HTTP server with Stripe's idempotency semantics, an eventually consistent
//! search, and a test-only admin API (`/_sim`) to inject faults around the commit point
//! and to count effects. Integration tests run it in-process with [`spawn`]; the demo
//! runs the `fleet-provider-sim` binary.
//!
//! [`stripe`] is a second simulator, of the subset of Stripe's API the payments provider
//! spoken as Stripe uses (transfers, PaymentIntents and their search), with what a
//! third-party double lacks: idempotency keys kept for a retention, a lagging search, a
//! rate limit.

mod admin;
mod api_error;
mod auth;
mod beneficiaries;
mod config;
mod create;
mod create_hook;
mod crm;
mod envelopes;
mod faults;
mod fields;
mod idempotency;
mod ledger;
mod orders;
mod payments;
mod rate_limit;
mod reads;
mod refunds;
mod reply;
mod request_log;
mod resource;
mod route;
mod router;
mod server;
mod state;
pub mod stripe;
pub mod traces;
mod webhook_delivery;
mod webhooks;

pub use beneficiaries::{seeded_beneficiary, seeded_beneficiary_asked};
pub use config::SimConfig;
/// The routes by name, as fault rules refer to them; the tests also match a request an
/// adapter builds against them, to know the simulator serves it.
pub use route::Route;
pub use server::{spawn, RunningSim};
