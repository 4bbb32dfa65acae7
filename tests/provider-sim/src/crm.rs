//! The reference CRM API (docs/design.md#crm-api): deals with a non-unique `external_id`, no
//! idempotency keys, an eventually consistent search, versions with `ETag` / `If-Match`,
//! and an optional asynchronous create.
//!
//! | request | answer |
//! |---|---|
//! | `POST /v1/deals` `{"external_id", "name", "amount_minor", "currency", "stage", "owner_id"}` | `201` deal + `ETag: "1"`, or `202 {"status": "queued"}` (asynchronous mode or `queued` fault) |
//! | `GET /v1/deals?external_id=X` | `200 {"data": [deal, …]}` (deals older than `crm_search_lag_ms`) |
//! | `GET /v1/deals/{id}` | `200` deal + `ETag: "<version>"`, or `404 resource_missing` |
//! | `PATCH /v1/deals/{id}` [`If-Match: "<version>"`] `{"name"?, "amount_minor"?, "currency"?, "stage"?, "owner_id"?}` | `200` deal at `version + 1` + `ETag`; `412 {"error": {"type": "version_conflict", "current_version": n}}`; `404 resource_missing` |
//! | `POST /_sim/deals` (create body) | `201` deal + `ETag`: created at once, no fault, not logged |
//! | `GET /_sim/deals/{id}` | `200` deal + `ETag`, or `404` |
//! | `PATCH /_sim/deals/{id}` (patch body) | `200` deal at `version + 1` + `ETag` (unconditional: "another user"), or `404` |
//!
//! A deal is `{"id": "deal_<ulid>", "version", "external_id", "name", "amount_minor",
//! "currency", "stage", "owner_id", "created_at", "updated_at"}`. Bodies are validated as
//! the payments API's are (400 `invalid_request` with `parameter_unknown`,
//! `parameter_missing`, `parameter_invalid`, `parameter_invalid_integer`,
//! `amount_too_small`, `invalid_currency`, `invalid_json`); a malformed `If-Match` is 400
//! `if_match_invalid`. Without `If-Match` (or with `*`) a patch applies unconditionally.
//!
//! A queued deal materialises `crm_async_delay_ms` (or the fault's `delay_ms`) after the
//! request, on the simulator's clock: until then it is invisible to every read, patch and
//! effect counter; from then on it is an ordinary deal (counted once).

mod admin;
mod api;
mod store;

pub use admin::routes as admin_routes;
pub use api::{create, get, patch, search};
pub use store::{CrmSettings, DealStore};
