//! The closed lists of the contract as OpenAPI enums, made from the lists the fleet's own
//! rules use, so the document cannot drift from them: the codes of problems (the
//! catalogue of [`crate::problem_codes`]), the reasons an intent is refused with (the intake's,
//! the same as the queue's dead-letter reasons) and the types of the outcome events.

use utoipa::openapi::schema::{Object, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// A string schema that allows `values` only.
pub(crate) fn string_enum(description: &str, values: Vec<String>) -> RefOr<Schema> {
    let mut object = Object::with_type(SchemaType::Type(Type::String));
    object.description = Some(description.to_owned());
    object.enum_values = Some(values.into_iter().map(Into::into).collect());
    RefOr::T(Schema::Object(object))
}

/// Every code a problem may carry (`code`).
pub struct ErrorCode;

impl ErrorCode {
    pub fn values() -> Vec<String> {
        crate::problem_codes::codes()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }
}

impl PartialSchema for ErrorCode {
    fn schema() -> RefOr<Schema> {
        string_enum(
            "The bounded code of a problem; each has a section in docs/api.md (`type`).",
            ErrorCode::values(),
        )
    }
}

impl ToSchema for ErrorCode {}

/// Every reason an intent is refused with: a 422's `code` on `POST /v1/intents` (a 409 for
/// `operation_id_conflict`, a 403 for `supersedes_forbidden`), and the queue's dead-letter
/// reason for the same intent.
pub struct RefusalReason;

impl RefusalReason {
    pub fn values() -> Vec<String> {
        let all = fleet_intake::series::REFUSAL_REASONS;
        all.iter().map(|r| (*r).to_owned()).collect()
    }
}

impl PartialSchema for RefusalReason {
    fn schema() -> RefOr<Schema> {
        string_enum(
            "Why an intent is refused: the same through the API, MCP and the queue (its dead-letter reason, docs/protocol.md).",
            RefusalReason::values(),
        )
    }
}

impl ToSchema for RefusalReason {}

/// The short type of an outcome event (`fleet.operation.<type>` as the CloudEvent's type).
pub struct EventTypeName;

impl EventTypeName {
    pub fn values() -> Vec<String> {
        fleet_core::events::EventType::ALL
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect()
    }
}

impl PartialSchema for EventTypeName {
    fn schema() -> RefOr<Schema> {
        string_enum(
            "An outcome event's type, published to `fleet.events` as the CloudEvent type `fleet.operation.<type>` (docs/events.md).",
            EventTypeName::values(),
        )
    }
}

impl ToSchema for EventTypeName {}
