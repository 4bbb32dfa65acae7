//! intent.v1 (docs/protocol.md): parsing and validation of what an agent enqueues.
//! Parse, don't validate: a `ValidIntent` can only be built by `parse_intent`, and every
//! refusal carries a bounded reason code for the dead-letter header and metrics.
//! The JSON Schema `shared/schemas/intent.v1.json` states the same limits; a test keeps
//! the two in agreement.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::catalogue::Target;
use crate::currency::is_iso_4217;
use crate::hash::Snapshot;
use crate::identifier::check_identifier;
use crate::ids::{OperationId, PayloadHash};
pub use crate::strict_json::MAX_SAFE_INTEGER;
use crate::strict_json::{check_strict, Ambiguity, StrictJsonError};

pub mod payloads;
pub mod proposal;

pub use crate::catalogue::Action;
pub use payloads::{DealCreatePayload, DealUpdatePayload, PaymentPayload, RefundPayload};

pub const SCHEMA: &str = "intent.v1";
/// Messages larger than this are refused before parsing.
pub const MAX_INTENT_BYTES: usize = 64 * 1024;
pub const MAX_APPROVAL_TTL_SECONDS: i64 = 30 * 24 * 3600;
/// Identifier-like text (ids, versions, names), in characters (Unicode scalar values,
/// what JSON Schema's `maxLength` counts), not bytes.
pub const MAX_TEXT_CHARS: usize = 256;
/// The free-text rationale shown to the approver, in characters.
pub const MAX_RATIONALE_CHARS: usize = 4096;

/// Why an intent was refused. `code()` is the bounded dead-letter reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntentError {
    #[error("message is {0} bytes, more than the {MAX_INTENT_BYTES}-byte limit")]
    Oversized(usize),
    #[error("message is not a UTF-8 JSON object: {0}")]
    Malformed(String),
    /// JSON that parsers may read differently (duplicate names, lone surrogates, numbers
    /// no double holds) or that cannot be stored (U+0000). `at` is a member path.
    #[error("{at}: {}", kind.problem())]
    Ambiguous { kind: Ambiguity, at: String },
    #[error("schema {0:?} is not supported (expected \"intent.v1\")")]
    UnsupportedSchema(String),
    #[error("action {0:?} is not one of {known}", known = known_actions())]
    UnknownAction(String),
    #[error("field {field}: {problem}")]
    InvalidField { field: String, problem: String },
}

impl IntentError {
    pub fn code(&self) -> &'static str {
        match self {
            IntentError::Oversized(_) => "oversized",
            IntentError::Malformed(_) => "malformed",
            IntentError::Ambiguous { kind, .. } => kind.code(),
            IntentError::UnsupportedSchema(_) => "unsupported_schema",
            IntentError::UnknownAction(_) => "unknown_action",
            IntentError::InvalidField { .. } => "invalid_field",
        }
    }

    pub(crate) fn field(field: &str, problem: impl Into<String>) -> Self {
        IntentError::InvalidField {
            field: field.to_owned(),
            problem: problem.into(),
        }
    }
}

/// The catalogue's wire names, for a refusal that names what is known.
fn known_actions() -> String {
    Action::ALL.map(Action::wire_name).join(", ")
}

/// A validated intent.v1 message.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidIntent {
    pub operation_id: OperationId,
    pub action: Action,
    pub snapshot: Snapshot,
    pub payload_hash: PayloadHash,
    pub approval_ttl_seconds: i64,
    pub rationale: Option<String>,
    pub supersedes: Option<OperationId>,
}

/// The envelope as it travels. Every member is required except the two optional links;
/// unknown members are refused so a typo cannot silently drop a constraint.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    schema: String,
    operation_id: String,
    tenant_id: String,
    action: String,
    provider: String,
    target: Option<String>,
    payload: Map<String, Value>,
    policy_version: String,
    data_version: String,
    approval_ttl_seconds: i64,
    #[serde(default)]
    rationale: Option<String>,
    #[serde(default)]
    supersedes: Option<String>,
}

/// Parses and validates one intent.v1 message from its raw bytes.
pub fn parse_intent(bytes: &[u8]) -> Result<ValidIntent, IntentError> {
    if bytes.len() > MAX_INTENT_BYTES {
        return Err(IntentError::Oversized(bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| IntentError::Malformed(e.to_string()))?;
    check_strict(text).map_err(|e| match e {
        StrictJsonError::Malformed(m) => IntentError::Malformed(m),
        StrictJsonError::Ambiguous { kind, at } => IntentError::Ambiguous { kind, at },
    })?;
    let raw: Value =
        serde_json::from_str(text).map_err(|e| IntentError::Malformed(e.to_string()))?;
    let Value::Object(object) = raw else {
        return Err(IntentError::Malformed(
            "top level is not a JSON object".into(),
        ));
    };
    // Schema and action first, so a future schema is reported as such, not as a field error.
    match object.get("schema") {
        Some(Value::String(s)) if s == SCHEMA => {}
        Some(Value::String(s)) => return Err(IntentError::UnsupportedSchema(s.clone())),
        _ => return Err(IntentError::field("schema", "missing or not a string")),
    }
    if let Some(Value::String(a)) = object.get("action") {
        if Action::parse(a).is_none() {
            return Err(IntentError::UnknownAction(a.clone()));
        }
    }
    // A refusal names the member (`approval_ttl_seconds`, `payload`); `intent` only when
    // no member can be named.
    let envelope: Envelope = crate::member_path::read(&Value::Object(object))
        .map_err(|r| IntentError::field(r.path.as_deref().unwrap_or("intent"), r.problem))?;
    validate_envelope(envelope)
}

fn validate_envelope(e: Envelope) -> Result<ValidIntent, IntentError> {
    let _ = e.schema;
    let operation_id =
        OperationId::parse(&e.operation_id).map_err(|p| IntentError::field("operation_id", p))?;
    let action =
        Action::parse(&e.action).ok_or_else(|| IntentError::UnknownAction(e.action.clone()))?;
    check_id("tenant_id", &e.tenant_id)?;
    check_id("provider", &e.provider)?;
    check_id("policy_version", &e.policy_version)?;
    check_id("data_version", &e.data_version)?;
    if let Some(t) = &e.target {
        check_id("target", t)?;
    }
    if let (Target::Required(what), None) = (action.spec().target, &e.target) {
        return Err(IntentError::field(
            "target",
            format!("{} needs {what} as target", action.wire_name()),
        ));
    }
    if !(1..=MAX_APPROVAL_TTL_SECONDS).contains(&e.approval_ttl_seconds) {
        return Err(IntentError::field(
            "approval_ttl_seconds",
            format!("must be between 1 and {MAX_APPROVAL_TTL_SECONDS}"),
        ));
    }
    if e.rationale
        .as_ref()
        .is_some_and(|r| r.chars().count() > MAX_RATIONALE_CHARS)
    {
        return Err(IntentError::field(
            "rationale",
            format!("longer than {MAX_RATIONALE_CHARS} characters"),
        ));
    }
    let supersedes = match &e.supersedes {
        Some(s) => Some(OperationId::parse(s).map_err(|p| IntentError::field("supersedes", p))?),
        None => None,
    };
    if supersedes.as_ref() == Some(&operation_id) {
        return Err(IntentError::field(
            "supersedes",
            "an operation cannot supersede itself",
        ));
    }
    let payload = Value::Object(e.payload);
    // Numbers elsewhere in the payload (a CRM patch's `probability: 0.35`) may be any
    // double: the strict reading already refused those parsers would read differently.
    action.spec().check(&payload)?;
    let snapshot = Snapshot {
        operation_id: e.operation_id,
        tenant_id: e.tenant_id,
        action: e.action,
        provider: e.provider,
        target: e.target,
        payload,
        policy_version: e.policy_version,
        data_version: e.data_version,
    };
    let payload_hash = snapshot.hash();
    Ok(ValidIntent {
        operation_id,
        action,
        snapshot,
        payload_hash,
        approval_ttl_seconds: e.approval_ttl_seconds,
        rationale: e.rationale,
        supersedes,
    })
}

/// Short free text (a deal's name, a reason, a subject): 1 to [`MAX_TEXT_CHARS`]
/// characters, no control characters. Shown to people with its invisible characters
/// revealed ([`crate::visible::reveal`]).
pub(crate) fn check_text(field: &str, value: &str) -> Result<(), IntentError> {
    if value.is_empty() || value.chars().count() > MAX_TEXT_CHARS {
        return Err(IntentError::field(
            field,
            format!("must be 1 to {MAX_TEXT_CHARS} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(IntentError::field(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

/// An identifier (tenant, provider, versions, target, the payload's ids): 1 to
/// [`MAX_TEXT_CHARS`] characters that satisfy the identifier rule
/// ([`crate::identifier`]: no invisible, directional, whitespace or control characters, one
/// script, not a look-alike of an ASCII id).
pub(crate) fn check_id(field: &str, value: &str) -> Result<(), IntentError> {
    check_text(field, value)?;
    check_identifier(value).map_err(|problem| IntentError::field(field, problem.to_string()))
}

/// `payload.amount_minor` and `payload.currency`: a positive safe integer in an active
/// ISO 4217 currency.
pub(crate) fn check_money(amount_minor: i64, currency: &str) -> Result<(), IntentError> {
    if !(1..=MAX_SAFE_INTEGER).contains(&amount_minor) {
        return Err(IntentError::field(
            "payload.amount_minor",
            format!("must be an integer from 1 to {MAX_SAFE_INTEGER}"),
        ));
    }
    if !is_iso_4217(currency) {
        return Err(IntentError::field(
            "payload.currency",
            "must be an ISO 4217 code such as KZT or USD",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
