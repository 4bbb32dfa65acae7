//! The payload of each action, as intent.v1 carries it. The same types are read by
//! `parse_intent` (unknown members refused) and describe themselves, limits included, as
//! JSON Schema (the MCP tools' input schemas), so what fleet reads and what it tells an
//! agent it reads cannot drift apart. The limits repeat shared/schemas/intent.v1.json;
//! a test holds the two in agreement.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{MAX_APPROVAL_TTL_SECONDS, MAX_RATIONALE_CHARS, MAX_SAFE_INTEGER, MAX_TEXT_CHARS};
use crate::currency::ISO_4217;

/// `payment.create`: pay an invoice to a beneficiary.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct PaymentPayload {
    /// The invoice this payment settles; also the payment's reference at the provider.
    #[schemars(schema_with = "text")]
    pub invoice_id: String,
    /// Who is paid.
    #[schemars(schema_with = "text")]
    pub beneficiary_id: String,
    /// The amount in the currency's minor unit (12,500.00 KZT is 1250000), an integer.
    #[schemars(schema_with = "amount_minor")]
    pub amount_minor: i64,
    /// An active ISO 4217 code, upper case.
    #[schemars(schema_with = "currency")]
    pub currency: String,
}

/// `refund.create`: give back (part of) a payment the provider holds.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RefundPayload {
    /// The provider's id of the payment refunded (`pay_…`).
    #[schemars(schema_with = "text")]
    pub payment_id: String,
    /// The amount refunded in the currency's minor unit, an integer.
    #[schemars(schema_with = "amount_minor")]
    pub amount_minor: i64,
    /// An active ISO 4217 code, upper case: the payment's.
    #[schemars(schema_with = "currency")]
    pub currency: String,
    /// Why, as the provider records it.
    #[schemars(schema_with = "text")]
    pub reason: String,
}

/// `crm.deal.create`: a new deal in the CRM.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct DealCreatePayload {
    #[schemars(schema_with = "text")]
    pub name: String,
    /// The deal's value in the currency's minor unit, an integer.
    #[schemars(schema_with = "amount_minor")]
    pub amount_minor: i64,
    /// An active ISO 4217 code, upper case.
    #[schemars(schema_with = "currency")]
    pub currency: String,
    /// The pipeline stage, e.g. `proposal`.
    #[schemars(schema_with = "text")]
    pub stage: String,
    /// The CRM user who owns the deal.
    #[schemars(schema_with = "text")]
    pub owner_id: String,
}

/// `crm.deal.update`: change fields of a deal, only if it is still at the version read.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct DealUpdatePayload {
    /// The deal's version the change was decided on; the update is refused if the deal
    /// moved on meanwhile (a new proposal is needed then).
    #[schemars(schema_with = "version")]
    pub expected_version: i64,
    /// The fields to set, at least one. Numbers here may be any double (0.35, 1e21).
    #[schemars(schema_with = "patch")]
    pub patch: Map<String, Value>,
}

// The member schemas, as shared/schemas/intent.v1.json states them.

/// Identifier-like text: 1 to 256 characters, no control characters (Unicode Cc).
pub fn text(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_TEXT_CHARS,
        "pattern": r"^[^\u0000-\u001f\u007f-\u009f]*$",
    })
}

pub fn amount_minor(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER})
}

pub fn currency(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"enum": ISO_4217})
}

fn version(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER})
}

/// `op_` + a ULID in upper-case Crockford base32.
pub fn operation_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "pattern": "^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$"})
}

pub fn approval_ttl_seconds(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 1, "maximum": MAX_APPROVAL_TTL_SECONDS})
}

/// Free text shown to the approver; line breaks allowed, U+0000 not.
pub fn rationale(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["string", "null"],
        "maxLength": MAX_RATIONALE_CHARS,
        "pattern": r"^[^\u0000]*$",
    })
}

const NO_NUL: &str = r"^[^\u0000]*$";

fn patch(generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"pattern": NO_NUL},
        "additionalProperties": generator.subschema_for::<AnyWithoutNul>(),
    })
}

/// Any JSON value with no U+0000 in a string or a member name (Postgres cannot store it).
/// Recursive, so it is a definition of its own that refers to itself.
struct AnyWithoutNul;

impl JsonSchema for AnyWithoutNul {
    fn inline_schema() -> bool {
        false
    }

    fn schema_name() -> Cow<'static, str> {
        "any_without_nul".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let itself = generator.subschema_for::<AnyWithoutNul>();
        json_schema!({
            "anyOf": [
                {"type": ["null", "boolean", "number"]},
                {"type": "string", "pattern": NO_NUL},
                {"type": "array", "items": itself},
                {"type": "object", "propertyNames": {"pattern": NO_NUL}, "additionalProperties": itself},
            ]
        })
    }
}
