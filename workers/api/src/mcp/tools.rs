//! The tools as an agent discovers them: names, descriptions, input schemas generated from
//! the types the calls are read with (for proposals, intent.v1's own payload types), and
//! annotations that say the truth. A proposal changes the world outside fleet once a
//! person approves it (`destructiveHint`, `openWorldHint`), and calling it again with the
//! same arguments is the same operation (`idempotentHint`): with the same operation id,
//! or without one, since the id is then derived from the proposal (`propose`). The reads
//! change nothing
//! and look only at fleet's own records.

use std::sync::LazyLock;

use std::sync::Arc;

use fleet_core::Action;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};

use super::propose::Proposed;
use super::read::{GetOperationArgs, ListOperationsArgs};
use crate::openapi::standalone_schema;

pub const GET_OPERATION: &str = "get_operation";
pub const LIST_OPERATIONS: &str = "list_operations";

/// Every tool, in the order they are listed (built once: the schemas never change).
pub fn catalogue() -> &'static [Tool] {
    static CATALOGUE: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        let mut tools: Vec<Tool> = Action::ALL.into_iter().map(proposal_tool).collect();
        tools.push(get_operation_tool());
        tools.push(list_operations_tool());
        tools
    });
    &CATALOGUE
}

const HOW_A_PROPOSAL_GOES: &str = "The proposal is validated and stored, and the call answers at once with \
its operation_id, payload_hash, status \"pending_approval\", approval_url (the page where a person \
approves or rejects it: give it to them) and approval_expires_at. Nothing is done until a person approves \
exactly this payload_hash in fleet; the confirmation your own client may ask for is not an approval, and \
this tool never waits for one. Then call get_operation with wait_for \"final\" to learn what happened. \
Calling again with the same arguments is the same operation (created: false, nothing new), whether \
or not you pass operation_id: left out, it is derived from tenant, action, target, payload and supersedes, \
so a retried call never proposes twice. The same operation_id with another snapshot is refused \
(operation_id_conflict); to propose the very same payload again on purpose, pass a new operation_id. A refusal is a tool error \
whose content is the HTTP API's problem details {\"code\", \"field\", \"title\", \"detail\", ...}: code is \
the reason the intent queue would refuse the same intent with (invalid_field, operation_id_conflict, ...) \
or tenant_not_granted, and field the member concerned (payload.amount_minor).";

/// The tool of one action, as its catalogue entry presents it; the input schema is the
/// one generated from the action's proposal type (intent.v1's payload type inside).
fn proposal_tool(action: Action) -> Tool {
    let spec = action.spec();
    let tool = Tool::new(
        spec.tool.name,
        format!("{} {HOW_A_PROPOSAL_GOES}", spec.tool.what),
        Arc::new(input_schema(spec.proposal_schema())),
    );
    let title = spec.tool.title;
    tool.with_title(title)
        .with_output_schema::<Proposed>()
        .annotate(
            ToolAnnotations::with_title(title)
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(true),
        )
}

/// A proposal type's schema as an input schema: without the top-level title and
/// description (the wrapper type's name and doc, noise to the model), as the SDK does for
/// the schemas it generates itself.
fn input_schema(mut schema: JsonObject) -> JsonObject {
    schema.remove("title");
    schema.remove("description");
    schema
}

fn read_only(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

fn get_operation_tool() -> Tool {
    let title = "Read an operation";
    Tool::new(
        GET_OPERATION,
        "Read one operation as fleet records it: status (not_started, in_progress, accepted, unknown, \
         succeeded, failed, cancelled, disputed), approval_status (pending, approved, rejected, expired), \
         escalated, external_id, error_code, reason, and the approved payload. With wait_for \"decision\" \
         the call answers once a person approved or rejected it (or the approval expired); with \"final\" \
         once it succeeded, failed, was cancelled or disputed. Either wait also ends when the operation \
         is escalated to a person, and at timeout_s (default 30, at most 60) with the operation as it is \
         then: look at it and call again. \"unknown\" means the provider's answer was lost and fleet is \
         finding out; \"escalated\" means a person is settling it. Neither is a failure: never propose \
         the action again because of them. Operations of other tenants are not found.",
        JsonObject::new(),
    )
    .with_input_schema::<GetOperationArgs>()
    .with_title(title)
    .with_raw_output_schema(Arc::new(standalone_schema("OperationView")))
    .annotate(read_only(title))
}

fn list_operations_tool() -> Tool {
    let title = "List operations";
    Tool::new(
        LIST_OPERATIONS,
        "List the operations of your tenants, newest first, optionally only those in one status or \
         approval status. Answers {\"data\": [operations], \"next_cursor\"}: pass next_cursor as cursor \
         for the next page; it is null on the last page.",
        JsonObject::new(),
    )
    .with_input_schema::<ListOperationsArgs>()
    .with_title(title)
    .with_raw_output_schema(Arc::new(standalone_schema("OperationPage")))
    .annotate(read_only(title))
}
