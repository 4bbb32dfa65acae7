//! The typed payload of one action ([`ActionPayload`]) and the behaviour an entry takes
//! from it ([`Behaviour`]): how a stored payload is checked, said in words, how a
//! provider's answer to it is classified and what a lookup proves, each reached through
//! the payload's own type.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::lookup::Reading;
use crate::outcome::{CallResult, Outcome};
use crate::reason::Reason;

/// What a provider call and a lookup are about: the operation's reference at the provider
/// (its stored idempotency key, also the key of keyed creates), its target and its
/// approved payload.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// `operations.idempotency_key`, fixed at intake (docs/design.md#tenant-boundaries).
    pub reference: &'a str,
    pub target: Option<&'a str>,
    pub payload: &'a Value,
}

/// The typed payload of one action, and the pure rules that belong to it.
pub trait ActionPayload: DeserializeOwned + JsonSchema + 'static {
    /// The arguments of the action's tool (a `Proposal` of this payload).
    type Proposal: JsonSchema + 'static;

    /// Rules beyond the types (text limits, money, formats). Refusals name the member as
    /// `payload.<member>`.
    fn check(&self) -> Result<(), IntentError>;

    /// What the person approving it reads first, from the approved values only: a
    /// sentence of typed values (action, amount, who receives it), then any free text
    /// quoted apart (`crate::headline::Headline`); `None` when something needed (the
    /// target, a known currency) is missing.
    fn describe(&self, target: Option<&str>) -> Option<Headline>;

    /// What one call to the provider proves about the effect.
    fn classify(&self, call: &CallResult, subject: &Subject<'_>) -> Outcome;

    /// What the provider objects a lookup returned prove about the effect. `via` names
    /// the lookup (for the evidence); `objects` are what it returned (a search's list, or
    /// the one object read by id, or none).
    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading;
}

/// The behaviour an entry takes from its payload type, as plain functions.
#[derive(Clone, Copy)]
pub struct Behaviour {
    pub(super) check: fn(&Value) -> Result<(), IntentError>,
    pub(super) describe: fn(Option<&str>, &Value) -> Option<Headline>,
    pub(super) classify: fn(&CallResult, &Subject<'_>) -> Outcome,
    pub(super) read_lookup: fn(&Subject<'_>, &str, &[Value]) -> Reading,
    pub(super) proposal_schema: fn() -> Map<String, Value>,
}

impl std::fmt::Debug for Behaviour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Behaviour")
    }
}

impl Behaviour {
    pub const fn of<P: ActionPayload>() -> Behaviour {
        Behaviour {
            check: check::<P>,
            describe: describe::<P>,
            classify: classify::<P>,
            read_lookup: read_lookup::<P>,
            proposal_schema: proposal_schema::<P::Proposal>,
        }
    }
}

/// The payload as its action's type; a refusal names the member (`payload.amount_minor`),
/// not the payload as a whole.
fn typed<P: ActionPayload>(payload: &Value) -> Result<P, IntentError> {
    crate::member_path::read::<P>(payload)
        .map_err(|r| IntentError::field(&r.under("payload"), r.problem))
}

fn check<P: ActionPayload>(payload: &Value) -> Result<(), IntentError> {
    typed::<P>(payload)?.check()
}

fn describe<P: ActionPayload>(target: Option<&str>, payload: &Value) -> Option<Headline> {
    typed::<P>(payload).ok()?.describe(target)
}

/// A stored payload that no longer reads as its action's is a bug or tampering: a person
/// looks, nothing is guessed.
fn unreadable() -> Outcome {
    Outcome::Unknown {
        reason: Reason::UnreadableSnapshot,
        escalate: true,
    }
}

fn classify<P: ActionPayload>(call: &CallResult, subject: &Subject<'_>) -> Outcome {
    match typed::<P>(subject.payload) {
        Ok(p) => p.classify(call, subject),
        Err(_) => unreadable(),
    }
}

fn read_lookup<P: ActionPayload>(subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
    match typed::<P>(subject.payload) {
        Ok(p) => p.read_lookup(subject, via, objects),
        Err(_) => Reading::ambiguous(
            Reason::UnreadableSnapshot,
            serde_json::json!({ "via": via }),
        ),
    }
}

/// The JSON Schema (2020-12) of a proposal type, as the MCP tools publish it.
fn proposal_schema<T: JsonSchema>() -> Map<String, Value> {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(object)) => object,
        // A derived schema of a struct is always an object.
        _ => Map::new(),
    }
}
