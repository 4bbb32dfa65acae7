//! The MCP door: the API as Model Context Protocol tools, for agents whose framework calls
//! tools over MCP. Served at `/mcp` with the streamable HTTP transport of the official
//! Rust SDK (`rmcp`).
//!
//! | tool | what |
//! |---|---|
//! | `payment_create`, `refund_create`, `crm_deal_create`, `crm_deal_update`, `order_status_change`, `contract_send`, `charge_create` (one per action of the catalogue) | propose one action: validated and stored exactly as `POST /v1/intents` stores an intent, answered at once with the approval link ([`propose`]) |
//! | `get_operation` | the operation view, optionally waiting for the decision or the end ([`read`]) |
//! | `list_operations` | the caller's operations, newest first, a page at a time ([`read`]) |
//! | `list_mandates`, `mandate_coverage` | the standing mandates that apply to the caller, and "am I covered?" for a would-be intent ([`mandates`]); never making or widening one |
//!
//! Every HTTP request to `/mcp` must carry a bearer token of the API's own (checked here,
//! before the SDK sees the request, with the same answer as every other route: 401); the
//! tools act for that principal's tenants only.
//!
//! Stateless: no MCP session is kept (no `Mcp-Session-Id`), every request stands alone, so
//! any replica may answer any request, like the rest of the API. Answers are plain JSON
//! (no event stream): a tool call is one request and one answer.
//!
//! No tool approves anything, nor stands in for a person: a proposal is only ever
//! approved in fleet by an approver, for its payload hash. An MCP client's own
//! confirmation of a tool call is not an approval.

mod answers;
mod lean;
mod mandates;
mod propose;
mod read;
mod server;
mod tools;

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use fleet_core::intent::MAX_INTENT_BYTES;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::auth::Caller;
use crate::state::AppState;

/// A JSON-RPC request carries an intent's arguments plus a little framing.
const MAX_REQUEST_BYTES: usize = 2 * MAX_INTENT_BYTES;
/// JSON-RPC 2.0: the body is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: JSON, but no request object.
const INVALID_REQUEST: i64 = -32600;

/// `/mcp`, authenticated.
pub fn router(state: AppState) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_REQUEST_BYTES)
        // The SDK's Host check protects servers that anyone on the machine may call from
        // a page that rebinds a name to 127.0.0.1. Here every request must carry a bearer
        // token, which such a page does not have; and behind a proxy the Host is the
        // proxy's, whatever API_ADDR says.
        .disable_allowed_hosts();
    let for_tools = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(server::FleetMcp::new(for_tools.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn(framing))
        .route_layer(middleware::from_fn_with_state(state, authenticate))
}

/// A JSON-RPC error an MCP client can read, for a message the SDK never sees: `id` is null,
/// since none could be read.
fn jsonrpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (status, axum::Json(body)).into_response()
}

/// JSON-RPC's own answers to a POST that is no JSON-RPC message: not JSON at all is -32700
/// (parse error), JSON that is no request object is -32600 (invalid request), both in JSON
/// as a client of the protocol expects, never in plain text. A well-formed message goes
/// on to the SDK unchanged.
async fn framing(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let json_content = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json_content {
        return jsonrpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "a JSON-RPC message is sent with Content-Type: application/json",
        );
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await else {
        return jsonrpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            INVALID_REQUEST,
            "the message is larger than the server takes",
        );
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(_) => {
            return jsonrpc_error(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                "parse error: the body is not JSON",
            )
        }
        // An array is a batch, which the older protocol revision allows: the SDK judges it.
        Ok(serde_json::Value::Array(_)) => {}
        Ok(serde_json::Value::Object(m))
            if m.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0") => {}
        Ok(_) => {
            return jsonrpc_error(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "invalid request: a JSON-RPC 2.0 message is an object with \"jsonrpc\": \"2.0\"",
            )
        }
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// Admits a request with a valid bearer token and hands its principal to the tools (in the
/// request's extensions, which the SDK passes on); anything else is the API's 401.
async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    match Caller::from_request_parts(&mut parts, &state).await {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(refused) => refused.into_response(),
    }
}
