//! What an entry of the action catalogue is made of: which provider serves the action,
//! whether it names a target, how its effect comes about (a keyed create, a searched
//! create, a conditional update: what decides how an uncertain attempt is settled), which
//! webhooks settle it, how an agent's tool presents it, and the behaviour it takes from
//! the action's typed payload ([`ActionPayload`]).
//!
//! The actions' files (`crate::actions`) are written in these terms; the catalogue
//! (`crate::catalogue`) lists their entries. So nothing here reads the catalogue, and an
//! action's file never names it.

pub mod action;
pub mod object_ref;
pub mod payload;
pub mod provider;

use serde_json::{Map, Value};

use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::lookup::Reading;
use crate::outcome::{CallResult, Outcome};

pub use action::Action;
pub use object_ref::{ObjectField, ObjectRef};
pub use payload::{ActionPayload, Behaviour, Subject};
pub use provider::ProviderName;

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

    /// The headline of a stored payload ([`crate::headline::Headline`]).
    pub fn describe(&self, target: Option<&str>, payload: &Value) -> Option<Headline> {
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
