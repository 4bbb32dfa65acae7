//! The reference orders API: order status transitions with a `from` precondition and the
//! caller's `transition_ref`, which the order remembers as its last one. No idempotency
//! keys: a repeated transition meets its own precondition already moved (409).
//!
//! | request | answer |
//! |---|---|
//! | `POST /v1/orders/{id}/transitions` `{"from", "to", "transition_ref", "reason"}` | `200` the order at `to`, `version + 1`, `last_transition_ref`; `409 {"error": {"type": "status_conflict", "current_status", "last_transition_ref"}}` when the order is not at `from`; `404 resource_missing` |
//! | `GET /v1/orders/{id}` | `200 {"id", "status", "version", "last_transition_ref", "created_at", "updated_at"}`, or `404` |
//! | `POST /_sim/orders` `{"id"?, "status"}` | `201` the order (id `ord_<ulid>` unless given), version 1, no transition yet: created at once, no fault, not logged |
//! | `GET /_sim/orders/{id}` | `200` the order, or `404` |
//! | `POST /_sim/orders/{id}/status` `{"status", "transition_ref"?}` | `200` the order moved as "another user" would (unconditional; its ref, or a fresh `other_<ulid>`), or `404` |
//!
//! Writes follow the CRM's order (`crm/api.rs`): logged with the `transition_ref` as the
//! reference and a fault drawn on arrival; `drop_before_commit` / `error_before_commit`
//! end it with no effect; validation (400); a `delay` fault sleeps; the transition is
//! committed; `error_after_commit` / `drop_after_commit` replace the answer. Every
//! transition applied is an effect, counted by its `transition_ref`.

mod admin;
mod api;
mod store;

pub use admin::routes as admin_routes;
pub use api::{get, transition};
pub use store::OrderStore;
