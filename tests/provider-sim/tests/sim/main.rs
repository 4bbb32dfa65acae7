//! HTTP tests of the provider simulator: one binary, one simulator per test, real
//! requests over 127.0.0.1.

mod admin;
mod beneficiaries;
mod common;
mod deals;
mod envelopes;
mod faults;
mod idempotency;
mod orders;
mod process;
mod rate_limit;
mod reads;
mod refunds;
mod stripe;
mod stripe_accounts;
mod webhooks;
