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
use schemars::JsonSchema;

use super::lean;
use super::read::{GetOperationArgs, ListOperationsArgs};
use crate::openapi::standalone_schema;

pub const GET_OPERATION: &str = "get_operation";
pub const LIST_OPERATIONS: &str = "list_operations";
pub const LIST_MANDATES: &str = "list_mandates";
pub const MANDATE_COVERAGE: &str = "mandate_coverage";

/// Every tool, in the order they are listed (built once: the schemas never change).
pub fn catalogue() -> &'static [Tool] {
    static CATALOGUE: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        let mut tools: Vec<Tool> = Action::ALL.into_iter().map(proposal_tool).collect();
        tools.push(get_operation_tool());
        tools.push(list_operations_tool());
        tools.push(list_mandates_tool());
        tools.push(mandate_coverage_tool());
        tools
    });
    &CATALOGUE
}

/// What every proposal tool adds to its action's sentence: the rest of how a proposal goes
/// (the envelope's members, retries, refusals) is said once, in the server's instructions.
const HOW_A_PROPOSAL_GOES: &str =
    "A person approves it (at the approval_url answered, where the deployment has a console): \
nothing is done before (your client's confirmation is not an approval).";

/// The envelope's members need no description in each tool: the server's instructions
/// say once what each is (the generated ones are doc comments written for programmers).
const ENVELOPE_NOTES: &[(&str, &str)] = &[
    ("operation_id", ""),
    ("tenant_id", ""),
    ("policy_version", ""),
    ("data_version", ""),
    ("approval_ttl_seconds", ""),
    ("rationale", ""),
    ("supersedes", ""),
    ("payload", ""),
    ("target", ""),
];

/// What the reads' output schemas describe of an operation: what an agent acts on.
const VIEW_MEMBERS: &[&str] = &[
    "data",
    "next_cursor",
    "operation_id",
    "status",
    "approval_status",
    "escalated",
];

/// The tool of one action, as its catalogue entry presents it; the input schema is the
/// one generated from the action's proposal type (intent.v1's payload type inside).
fn proposal_tool(action: Action) -> Tool {
    let spec = action.spec();
    let tool = Tool::new(
        spec.tool.name,
        format!("{} {HOW_A_PROPOSAL_GOES}", spec.tool.what),
        Arc::new(lean::input(
            input_schema(spec.proposal_schema()),
            ENVELOPE_NOTES,
        )),
    );
    tool.with_title(spec.tool.title).annotate(
        ToolAnnotations::new()
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

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// The JSON Schema of `T`, as the SDK generates it.
fn schema_of<T: JsonSchema + 'static>() -> JsonObject {
    rmcp::handler::server::common::schema_for_type::<T>()
        .as_ref()
        .clone()
}

fn get_operation_tool() -> Tool {
    Tool::new(
        GET_OPERATION,
        "Read one operation (status, approval_status, escalated, external_id, error_code, reason), \
         waiting with wait_for for a decision or the end, at most timeout_s: then call again. \
         \"unknown\" (fleet is finding out) and \"escalated\" (a person settles it): Neither is a \
         failure, never propose it again.",
        Arc::new(lean::input(schema_of::<GetOperationArgs>(), &[])),
    )
    .with_title("Read an operation")
    .with_raw_output_schema(Arc::new(lean::output_of_members(
        standalone_schema("OperationView"),
        VIEW_MEMBERS,
    )))
    .annotate(read_only())
}

fn list_operations_tool() -> Tool {
    Tool::new(
        LIST_OPERATIONS,
        "Your tenants' operations, newest first, optionally of one status or approval_status. \
         Pass next_cursor as cursor for the next page (null on the last).",
        Arc::new(lean::input(schema_of::<ListOperationsArgs>(), &[])),
    )
    .with_title("List operations")
    .with_raw_output_schema(Arc::new(lean::output_of_members(
        standalone_schema("OperationPage"),
        VIEW_MEMBERS,
    )))
    .annotate(read_only())
}

fn list_mandates_tool() -> Tool {
    Tool::new(
        LIST_MANDATES,
        "The standing mandates for you in your tenants: status, available_minor, used_count \
         of count_limit, and the signed statement (actions, payees, limits, window).",
        Arc::new(lean::input(
            schema_of::<super::mandates::NoArguments>(),
            &[],
        )),
    )
    .with_title("List mandates")
    .annotate(read_only())
}

fn mandate_coverage_tool() -> Tool {
    Tool::new(
        MANDATE_COVERAGE,
        "Am I covered? Whether a standing mandate would approve an intent (action, payee, \
         amount_minor, currency; or intent) without a person: covered and mandate_id with \
         available_after_minor, or the reason.",
        Arc::new(lean::input(
            schema_of::<crate::mandate_coverage::CoverageQuestion>(),
            &[
                ("tenant_id", ""),
                ("action", ""),
                ("amount_minor", ""),
                ("currency", ""),
            ],
        )),
    )
    .with_title("Am I covered?")
    .annotate(read_only())
}

#[cfg(test)]
mod tests {
    /// What an agent's context pays for the list before any call.
    const MOST_LIST_BYTES: usize = 16 * 1024;

    #[test]
    fn the_whole_tool_list_stays_under_16_kib_and_repeats_no_long_pattern() {
        let list = serde_json::json!({"tools": super::catalogue()}).to_string();
        assert!(list.len() < MOST_LIST_BYTES, "{} bytes", list.len());
        assert!(
            !list.contains("u034f"),
            "the identifier pattern is not repeated"
        );
        assert!(!list.contains("\"AED\""), "nor the currency list");
    }
}
