//! The MCP server itself: what it says about itself, its tools, and the dispatch of a
//! call to the tool, for the principal the request authenticated as.

use std::sync::LazyLock;

use axum::http::request::Parts;
use fleet_core::intent::proposal::action_of_tool;
use fleet_core::trace_context::TraceParent;
use fleet_core::Action;
use fleet_runtime::trace;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tracing::Instrument;

use super::answers::refusal;
use super::tools::{catalogue, GET_OPERATION, LIST_MANDATES, LIST_OPERATIONS, MANDATE_COVERAGE};
use super::{mandates, propose, read};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::request_id::RequestId;
use crate::request_slots::HeldSlot;
use crate::state::AppState;

/// What the server tells an agent about itself: every tool of the catalogue by name (built
/// from it, so a new action's tool is never missing from the text), and how a proposal goes.
fn instructions() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        let proposals: Vec<&str> = Action::ALL
            .into_iter()
            .map(|a| a.spec().tool.name)
            .collect();
        format!(
            "fleet executes side effects (payments, refunds, CRM changes, order status changes, \
             contracts) that a person approved, exactly once. Propose one with its tool ({}): it is \
             stored and answered at once with an approval link for a person. Nothing happens until \
             that person approves it in fleet; then follow it with {GET_OPERATION} (wait_for \
             \"final\"), or see your operations with {LIST_OPERATIONS}. An operation that is \
             \"unknown\" or \"escalated\" is being settled, not failed: never propose it again. A \
             retried proposal with the same arguments is the same operation (its operation_id, when \
             you give none, is derived from what it proposes), never a second one. Before \
             proposing routine spend, {MANDATE_COVERAGE} says whether a standing mandate \
             approves it without a person ({LIST_MANDATES}: the mandates for you and what is \
             left of them).\n\
             Every proposal takes the same envelope around its payload: operation_id (optional: \
             `op_` + a ULID; left out, it is derived from the proposal; pass the same one on every \
             retry), tenant_id (optional when your token has one tenant), policy_version (the \
             policy in force for the tenant and action, e.g. payments-v3; another is refused \
             policy_not_in_force), data_version (the version of the data you read, e.g. \
             inv_9182@7), approval_ttl_seconds (how long the approval may wait), rationale (why, \
             for the person approving; not part of the hash), supersedes (the operation this one \
             corrects), and target for a tool that changes a named object. Identifiers and short \
             texts are 1 to 256 printable characters; the whole rule, and the currencies taken, are in \
             GET /v1/schemas/intent.v1.json. A refusal is a tool error with the HTTP API's \
             problem details: code (invalid_field, operation_id_conflict, ...) and field, the \
             member at fault (payload.amount_minor).",
            proposals.join(", ")
        )
    });
    &TEXT
}

/// One per request (the service is stateless); cheap to make.
#[derive(Clone)]
pub struct FleetMcp {
    state: AppState,
}

impl FleetMcp {
    pub fn new(state: AppState) -> FleetMcp {
        FleetMcp { state }
    }
}

/// What the HTTP request carries for the tools: the principal it authenticated as (see
/// `super::authenticate`), or its request slot.
fn from_request<T: Clone + Send + Sync + 'static>(
    context: &RequestContext<RoleServer>,
) -> Option<T> {
    context
        .extensions
        .get::<Parts>()?
        .extensions
        .get::<T>()
        .cloned()
}

impl ServerHandler for FleetMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("fleet", env!("CARGO_PKG_VERSION")).with_title("fleet"),
            )
            .with_instructions(instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(catalogue().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The SDK may run a call in a task of its own, outside the HTTP request's span:
        // the request's trace and id are taken from its extensions again, so that what the
        // tool logs and stores carries them.
        let hop =
            from_request::<TraceParent>(&context).unwrap_or_else(|| trace::continue_or_start(None));
        let request_id = from_request::<RequestId>(&context)
            .map(|id| id.0)
            .unwrap_or_default();
        let span = trace::request_span(&request_id, &hop);
        trace::scoped(hop, self.dispatch(request, context).instrument(span)).await
    }
}

impl FleetMcp {
    /// A tool call, for the principal the request authenticated as.
    async fn dispatch(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(caller) = from_request::<Caller>(&context) else {
            // Only reachable if the route lost its authentication layer.
            return Ok(refusal(&ApiError::Unauthorized).into());
        };
        let arguments = request.arguments.unwrap_or_default();
        let state = &self.state;
        let result: CallToolResult = match request.name.as_ref() {
            GET_OPERATION => {
                let held = from_request::<HeldSlot>(&context);
                read::get_operation(state, &caller, held.as_ref(), arguments, context.ct.clone())
                    .await
            }
            LIST_OPERATIONS => read::list_operations(state, &caller, arguments).await,
            LIST_MANDATES => mandates::list_mandates(state, &caller, arguments).await,
            MANDATE_COVERAGE => mandates::mandate_coverage(state, &caller, arguments).await,
            name => match action_of_tool(name) {
                Some(action) => propose::propose(state, &caller, action, arguments).await,
                None => {
                    return Err(ErrorData::invalid_params(
                        "no such tool; tools/list names them",
                        None,
                    ))
                }
            },
        };
        // The tool's name and whether it was refused, never its arguments.
        tracing::info!(
            principal = %caller.0.name,
            tool = request.name.as_ref(),
            refused = result.is_error == Some(true),
            "mcp tool called"
        );
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_name_every_tool_of_the_catalogue() {
        let text = instructions();
        for tool in catalogue() {
            assert!(
                text.contains(tool.name.as_ref()),
                "{} missing: {text}",
                tool.name
            );
        }
    }
}
