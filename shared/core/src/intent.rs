//! intent.v1 (docs/protocol.md): parsing and validation of what an agent enqueues.
//! Parse, don't validate: a `ValidIntent` can only be built by `parse_intent`, and every
//! refusal carries a bounded reason code for the dead-letter header and metrics.
//! The JSON Schema `shared/schemas/intent.v1.json` states the same limits; a test keeps
//! the two in agreement.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::catalogue::Target;
use crate::hash::Snapshot;
use crate::ids::{OperationId, PayloadHash};
use crate::members::checks::check_id;
use crate::strict_json::{check_strict, StrictJsonError};

pub mod derived_id;
pub mod proposal;

pub use crate::actions::deal_create::DealCreatePayload;
pub use crate::actions::deal_update::DealUpdatePayload;
pub use crate::actions::payment_create::PaymentPayload;
pub use crate::actions::refund_create::RefundPayload;
pub use crate::catalogue::Action;
pub use crate::intent_error::IntentError;
pub use crate::intent_limits::{
    MAX_APPROVAL_TTL_SECONDS, MAX_INTENT_BYTES, MAX_RATIONALE_CHARS, MAX_SAFE_INTEGER,
    MAX_TEXT_CHARS,
};

pub const SCHEMA: &str = "intent.v1";

/// The refusal of an action the catalogue does not list, naming those it does.
fn unknown_action(action: &str) -> IntentError {
    IntentError::UnknownAction {
        action: action.to_owned(),
        known: Action::ALL.map(Action::wire_name).join(", "),
    }
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
            return Err(unknown_action(a));
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
    let action = Action::parse(&e.action).ok_or_else(|| unknown_action(&e.action))?;
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

#[cfg(test)]
mod tests;
