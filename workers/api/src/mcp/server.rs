//! The MCP server itself: what it says about itself, its tools, and the dispatch of a
//! call to the tool, for the principal the request authenticated as.

use std::sync::LazyLock;

use axum::http::request::Parts;
use fleet_core::intent::proposal::action_of_tool;
use fleet_core::Action;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::answers::refusal;
use super::tools::{catalogue, GET_OPERATION, LIST_OPERATIONS};
use super::{propose, read};
use crate::auth::Caller;
use crate::error::ApiError;
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
             you give none, is derived from what it proposes), never a second one.",
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
