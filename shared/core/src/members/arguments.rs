//! The arguments of an action's tool (the MCP door): every member of intent.v1 but those
//! the tool implies (`schema`, `action`, `provider`), described as JSON Schema from the
//! same member schemas the reading uses. Each action names its own as its payload's
//! `Proposal` (`crate::action_spec::ActionPayload`); `crate::intent::proposal` turns them into
//! the intent.v1 object.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;

use crate::members::schemas;

/// The arguments of the tool of an action: the members of intent.v1 but those the tool
/// implies, `target` among them only for an action that changes a named object
/// (`crm_deal_update`, …).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "{T}Proposal")]
pub struct Proposal<P, T = NoTarget> {
    /// `op_` + a ULID (upper-case Crockford base32). Leave it out and one is assigned;
    /// pass your own, and the same one on every retry, to make a retried call the same
    /// operation rather than a second one.
    #[serde(default)]
    #[schemars(schema_with = "optional_operation_id")]
    pub operation_id: Option<String>,
    /// The tenant acted for. May be left out when your token is granted exactly one.
    #[serde(default)]
    #[schemars(schema_with = "optional_identifier")]
    pub tenant_id: Option<String>,
    /// The object changed, for an action that names one.
    #[serde(flatten)]
    pub target: T,
    /// What the action does (for an action on a named object, the change), exactly as
    /// the person approving it will see it.
    pub payload: P,
    /// The quorum policy in force for the tenant and action (e.g. `payments-v3`,
    /// `crm-v1`): the deployment decides it, and another version is refused
    /// `policy_not_in_force`.
    #[schemars(schema_with = "schemas::identifier")]
    pub policy_version: String,
    /// The version of the data you looked at (e.g. `inv_9182@7`, `deal_7@3`).
    #[schemars(schema_with = "schemas::identifier")]
    pub data_version: String,
    /// How long the approval may wait, in seconds (1 to 2,592,000, 30 days).
    #[schemars(schema_with = "schemas::approval_ttl_seconds")]
    pub approval_ttl_seconds: i64,
    /// Why, for the person approving (at most 4,096 characters; not part of the hash).
    #[serde(default)]
    #[schemars(schema_with = "schemas::rationale")]
    pub rationale: Option<String>,
    /// The operation this one corrects; it is cancelled if it never started, and this
    /// proposal is refused if it did or might have.
    #[serde(default)]
    #[schemars(schema_with = "optional_operation_id")]
    pub supersedes: Option<String>,
}

/// The arguments of the tool of an action that changes a named object
/// (`crm_deal_update`, …): a proposal with its target.
pub type TargetedProposal<P> = Proposal<P, Target>;

/// No target: the proposal has no `target` member.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(rename = "")]
pub struct NoTarget {}

/// The target of a proposal that changes a named object.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(rename = "Targeted")]
pub struct Target {
    /// The id of the object changed (the deal, the order).
    #[schemars(schema_with = "schemas::identifier")]
    pub target: String,
}

fn nullable(schema: Schema) -> Schema {
    json_schema!({"anyOf": [schema, {"type": "null"}]})
}

fn optional_operation_id(generator: &mut SchemaGenerator) -> Schema {
    nullable(schemas::operation_id(generator))
}

fn optional_identifier(generator: &mut SchemaGenerator) -> Schema {
    nullable(schemas::identifier(generator))
}
