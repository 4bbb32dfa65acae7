//! How a tool answers. A result carries its JSON twice, as MCP asks: as structured content
//! and as text (for clients that only show text). A refusal is a tool error (`isError`)
//! whose body is the HTTP API's problem details (`code`, `field`, `title`, `detail`, …), with the same
//! bounded codes (for a proposal, the dead-letter reasons), so an agent reads the same
//! refusal whichever door it came through. Protocol errors are left to the SDK (an
//! unknown tool); everything about the call itself is a tool error the agent can read.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

use axum::http::StatusCode;

use crate::error::ApiError;
use crate::problem::Problem;

/// A successful answer: `value`, plus `note` (one sentence for the model) when given.
pub fn answer(value: Value, note: Option<String>) -> CallToolResult {
    let mut result = CallToolResult::structured(value);
    if let Some(note) = note {
        result.content.push(ContentBlock::text(note));
    }
    result
}

/// A refusal, exactly as the HTTP API would word it.
pub fn refusal(error: &ApiError) -> CallToolResult {
    problem(error.problem())
}

/// Arguments the tool cannot read (of the wrong shape or out of range); `field` is the
/// member's path below the arguments (`wait_for`, `payload.amount_minor`), or `arguments`
/// when the arguments as a whole are at fault.
pub fn bad_arguments(field: impl Into<String>) -> CallToolResult {
    problem(Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_arguments",
        Some(field.into()),
    ))
}

/// A tool error carrying `problem` (without a request id: the HTTP answer of the call has
/// it as `X-Request-Id`).
fn problem(problem: Problem) -> CallToolResult {
    let mut body = serde_json::to_value(&problem).unwrap_or_else(|_| json!({}));
    if let Some(map) = body.as_object_mut() {
        map.remove("request_id");
    }
    CallToolResult::structured_error(body)
}
