//! `GET /v1/schemas/intent.v1.json`: the JSON Schema of intent.v1, so an agent can
//! validate what it sends against the limits of the very build that will read it. The
//! file is embedded at build time: the API serves the schema of the validator it runs,
//! never a copy that drifted.

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::schema::{Object, Schema};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// `shared/schemas/intent.v1.json`, byte for byte.
pub const INTENT_V1_SCHEMA: &str = include_str!("../../../shared/schemas/intent.v1.json");

/// An intent.v1 message: what an agent proposes. Its schema in the document is derived
/// from `shared/schemas/intent.v1.json` ([`crate::openapi::document`] puts it in, one schema per action);
/// this placeholder only names it for the routes that take it.
pub struct IntentV1;

impl PartialSchema for IntentV1 {
    fn schema() -> RefOr<Schema> {
        RefOr::T(Schema::Object(Object::new()))
    }
}

impl ToSchema for IntentV1 {}

/// The media type of a JSON Schema document.
pub const SCHEMA_CONTENT_TYPE: &str = "application/schema+json";

/// The intent.v1 JSON Schema (2020-12).
///
/// The same limits the API and the `intents.prepare` queue enforce, except the rules a
/// schema cannot state because a validator sees parsed values, not the text (duplicate
/// members, lone surrogates, integers written with a fraction, numbers no double holds).
/// No token needed.
#[utoipa::path(
    get,
    path = "/v1/schemas/intent.v1.json",
    tag = "schemas",
    responses(
        (status = 200, description = "The JSON Schema of intent.v1.", content_type = "application/schema+json", body = Object),
    )
)]
pub async fn intent_v1_schema() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, SCHEMA_CONTENT_TYPE)],
        INTENT_V1_SCHEMA,
    )
}
