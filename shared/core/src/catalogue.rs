//! The action catalogue: every side effect fleet can take, one entry each. An entry says
//! which provider serves the action, whether it names a target, how its effect comes
//! about (a keyed create, a searched create, a conditional update: what decides how an
//! uncertain attempt is settled), which webhooks settle it, how an agent's tool presents
//! it, and, from the action's typed payload ([`ActionPayload`]), how its payload is
//! checked, said in words, how a provider's answer is classified and what a lookup
//! proves. prepare, execute, reconcile, webhook-ingest, the API, the console and the MCP
//! tools all read these entries; none of them matches on the action itself.
//!
//! Adding an action is: a typed payload implementing [`ActionPayload`] (a file under
//! `actions/`), its [`ActionSpec`] constant, a variant of [`Action`] and a line in
//! [`CATALOGUE`] (in the variant's order), plus the provider adapter's request and lookup
//! (`fleet_providers`). docs/adding-an-action.md walks through one.

pub mod capabilities;
mod provider;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::actions;
use crate::intent::IntentError;
use crate::objects::ObjectRef;
use crate::outcome::{CallResult, Outcome};
use crate::reconcile::Reading;

pub use capabilities::{guard, Capabilities, ProviderCapabilities};
pub use provider::ProviderName;

/// One action of the catalogue. The discriminant is the action's index in [`CATALOGUE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    PaymentCreate,
    RefundCreate,
    CrmDealCreate,
    CrmDealUpdate,
    OrderStatusChange,
    ContractSend,
}

/// Every action, in catalogue order.
pub static CATALOGUE: [&ActionSpec; 6] = [
    &actions::payment_create::SPEC,
    &actions::refund_create::SPEC,
    &actions::deal_create::SPEC,
    &actions::deal_update::SPEC,
    &actions::order_status_change::SPEC,
    &actions::contract_send::SPEC,
];

// Each entry sits at its action's index, so `Action::spec` is an array read.
const _: () = {
    let mut i = 0;
    while i < CATALOGUE.len() {
        assert!(
            CATALOGUE[i].action as usize == i,
            "CATALOGUE is not in Action's order"
        );
        i += 1;
    }
};

impl Action {
    pub const ALL: [Action; 6] = [
        Action::PaymentCreate,
        Action::RefundCreate,
        Action::CrmDealCreate,
        Action::CrmDealUpdate,
        Action::OrderStatusChange,
        Action::ContractSend,
    ];

    /// The action's catalogue entry.
    pub fn spec(self) -> &'static ActionSpec {
        CATALOGUE[self as usize]
    }

    pub fn wire_name(self) -> &'static str {
        self.spec().wire_name
    }

    pub fn parse(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.wire_name() == s)
    }
}

/// How an action's effect comes about at its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// A create sent under the operation's idempotency key, which the provider
    /// deduplicates while it keeps the key. A same-key retry is safe only inside that
    /// window; past it only a lookup or a person decides.
    KeyedCreate,
    /// A create the provider cannot deduplicate: every claim first searches by the
    /// reference the create carries (the operation id) and creates only once an empty
    /// search proves there is nothing.
    SearchedCreate,
    /// A change conditional on what the person approved (a version, a status): it cannot
    /// apply twice, and a refused precondition is a new decision, never a retry.
    ConditionalUpdate,
}

/// Whether an intent names the object the action acts on (`target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Allowed and carried in the snapshot, but not needed.
    Optional,
    /// Required: what the target is, for the refusal ("the deal id").
    Required(&'static str),
}

/// The provider events that report the effect's status: `<object>.<status>` types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSpec {
    /// The object named in the event type (`payment` in `payment.succeeded`).
    pub object: &'static str,
    /// The status that settles the operation as succeeded.
    pub succeeded: &'static str,
    /// The status that settles it as failed.
    pub failed: &'static str,
    /// Statuses reported on the way (heard, never applied).
    pub pending: &'static [&'static str],
    /// The member of the reported object that echoes our reference (the stored key).
    pub reference_field: &'static str,
}

/// How the action's MCP tool presents itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolText {
    /// The wire name with `_` for `.` (`payment_create`).
    pub name: &'static str,
    pub title: &'static str,
    /// One or two sentences on what the proposal does.
    pub what: &'static str,
}

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

    /// One sentence for the person approving it, from the approved values only;
    /// `None` when something needed (the target, a known currency) is missing.
    fn describe(&self, target: Option<&str>) -> Option<String>;

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
    check: fn(&Value) -> Result<(), IntentError>,
    describe: fn(Option<&str>, &Value) -> Option<String>,
    classify: fn(&CallResult, &Subject<'_>) -> Outcome,
    read_lookup: fn(&Subject<'_>, &str, &[Value]) -> Reading,
    proposal_schema: fn() -> Map<String, Value>,
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

fn describe<P: ActionPayload>(target: Option<&str>, payload: &Value) -> Option<String> {
    typed::<P>(payload).ok()?.describe(target)
}

/// A stored payload that no longer reads as its action's is a bug or tampering: a person
/// looks, nothing is guessed.
fn unreadable() -> Outcome {
    Outcome::Unknown {
        reason: "unreadable_snapshot".into(),
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
        Err(_) => Reading::ambiguous("unreadable_snapshot", serde_json::json!({ "via": via })),
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

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct ActionSpec {
    pub action: Action,
    /// `payment.create`: intent.v1's `action`, the rows' and metrics' label.
    pub wire_name: &'static str,
    /// The provider that serves it (intent.v1's `provider`, `/webhooks/{provider}`).
    pub provider: ProviderName,
    pub target: Target,
    pub effect: Effect,
    /// Whether the payload carries `amount_minor` and `currency` (quorum bands, webhook
    /// amount checks).
    pub has_amount: bool,
    /// The payload member naming who receives the effect (a payment's beneficiary), said
    /// in the statement an approver signs; `None` when the effect has no such party.
    pub payee: Option<&'static str>,
    /// The provider objects an intent names (a refund's payment, the deal an update
    /// changes), which must be the intent's tenant's (`crate::objects`).
    pub objects: &'static [ObjectRef],
    pub webhook: Option<WebhookSpec>,
    pub tool: ToolText,
    pub behaviour: Behaviour,
}

impl ActionSpec {
    /// Reads and checks a payload (`deny_unknown_fields`: a member it does not know is
    /// refused).
    pub fn check(&self, payload: &Value) -> Result<(), IntentError> {
        (self.behaviour.check)(payload)
    }

    pub fn describe(&self, target: Option<&str>, payload: &Value) -> Option<String> {
        (self.behaviour.describe)(target, payload)
    }

    pub fn classify(&self, call: &CallResult, subject: &Subject<'_>) -> Outcome {
        (self.behaviour.classify)(call, subject)
    }

    pub fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        (self.behaviour.read_lookup)(subject, via, objects)
    }

    /// The input schema of the action's MCP tool.
    pub fn proposal_schema(&self) -> Map<String, Value> {
        (self.behaviour.proposal_schema)()
    }

    /// Whether a settled effect can be audited for duplicates by searching its reference:
    /// a conditional update cannot apply twice (the precondition moves with the first).
    pub fn may_duplicate(&self) -> bool {
        match self.effect {
            Effect::KeyedCreate | Effect::SearchedCreate => true,
            Effect::ConditionalUpdate => false,
        }
    }
}

/// Every provider some action is served by, in catalogue order, once each.
pub fn providers() -> Vec<ProviderName> {
    let mut out: Vec<ProviderName> = Vec::new();
    for spec in CATALOGUE {
        if !out.contains(&spec.provider) {
            out.push(spec.provider);
        }
    }
    out
}

/// The providers whose events settle some action.
pub fn webhook_providers() -> Vec<ProviderName> {
    let mut out: Vec<ProviderName> = Vec::new();
    for spec in CATALOGUE.iter().filter(|s| s.webhook.is_some()) {
        if !out.contains(&spec.provider) {
            out.push(spec.provider);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_finds_its_entry_and_names_round_trip() {
        for action in Action::ALL {
            assert_eq!(action.spec().action, action);
            assert_eq!(Action::parse(action.wire_name()), Some(action));
            assert_eq!(
                action.spec().tool.name,
                action.wire_name().replace('.', "_")
            );
        }
        assert_eq!(Action::ALL.len(), CATALOGUE.len());
        assert_eq!(Action::parse("payment.delete"), None);
    }

    #[test]
    fn a_target_is_required_exactly_of_conditional_updates() {
        for spec in CATALOGUE {
            let required = matches!(spec.target, Target::Required(_));
            assert_eq!(
                required,
                spec.effect == Effect::ConditionalUpdate,
                "{}",
                spec.wire_name
            );
        }
    }

    #[test]
    fn every_tool_schema_is_an_object_with_a_payload() {
        for spec in CATALOGUE {
            let schema = spec.proposal_schema();
            assert_eq!(schema["type"], "object", "{}", spec.wire_name);
            assert!(
                schema["properties"]["payload"].is_object(),
                "{}",
                spec.wire_name
            );
        }
    }

    #[test]
    fn providers_are_listed_once() {
        use ProviderName as P;
        assert_eq!(providers(), [P::Payments, P::Crm, P::Orders, P::Esign]);
        assert_eq!(webhook_providers(), [P::Payments, P::Esign]);
        // Every provider serves some action.
        assert_eq!(providers(), ProviderName::ALL);
    }
}
