//! An agent on fleet-api's MCP door: the official Rust SDK's client (`rmcp`) over the
//! streamable HTTP transport, with a bearer token, as an agent framework would connect.

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation, Tool};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;

use crate::ApiProcess;

/// A connected MCP client.
pub struct McpAgent {
    client: RunningService<RoleClient, ClientConfig>,
}

/// What a tool call answered: whether it was refused, and its structured content.
#[derive(Debug, Clone)]
pub struct ToolAnswer {
    pub is_error: bool,
    pub content: Value,
    /// Every text block, the JSON one first.
    pub texts: Vec<String>,
}

impl ToolAnswer {
    fn of(result: CallToolResult) -> ToolAnswer {
        ToolAnswer {
            is_error: result.is_error == Some(true),
            content: result.structured_content.unwrap_or(Value::Null),
            texts: result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect(),
        }
    }

    /// Asserts that one of its text blocks says `words`.
    pub fn says(&self, words: &str) {
        assert!(
            self.texts.iter().any(|t| t.contains(words)),
            "no text says {words:?}: {:?}",
            self.texts
        );
    }

    /// The content of a successful call (panics on a refusal, showing it).
    pub fn ok(self) -> Value {
        assert!(!self.is_error, "the tool refused: {}", self.content);
        self.content
    }

    /// `(code, field)` of a refusal (panics on a success, showing it). The refusal is the
    /// HTTP API's problem: its `type` links the code's section, and the deprecated `error`
    /// member says the same.
    pub fn refusal(&self) -> (String, Value) {
        assert!(self.is_error, "the tool did not refuse: {}", self.content);
        let problem = &self.content;
        let code = problem["code"].as_str().unwrap_or_default().to_owned();
        assert_eq!(
            problem["type"],
            format!("/docs/api.md#error-{code}"),
            "{problem}"
        );
        assert_eq!(
            (&problem["error"]["code"], &problem["error"]["field"]),
            (&problem["code"], &problem["field"]),
            "{problem}"
        );
        (code, problem["field"].clone())
    }
}

impl ApiProcess {
    /// Connects to this API's `/mcp` with `token` (initialising the MCP connection).
    pub async fn mcp(&self, token: &str) -> Result<McpAgent, String> {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url("/mcp")).auth_header(token),
        );
        let client = ClientConfig::new(Default::default(), Implementation::new("fleet-tests", "0"))
            .serve(transport)
            .await
            .map_err(|e| e.to_string())?;
        Ok(McpAgent { client })
    }
}

impl McpAgent {
    pub async fn tools(&self) -> Vec<Tool> {
        self.client.list_all_tools().await.expect("tools/list")
    }

    /// Calls `tool` with `arguments` (a JSON object).
    pub async fn call(&self, tool: &str, arguments: Value) -> ToolAnswer {
        call(self.client.peer(), tool, arguments).await
    }

    /// A handle for calls from another task.
    pub fn peer(&self) -> Peer<RoleClient> {
        self.client.peer().clone()
    }

    /// What the server said about itself when the connection was made.
    pub fn server_instructions(&self) -> Option<String> {
        self.client.peer_info()?.instructions.clone()
    }

    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

pub async fn call(peer: &Peer<RoleClient>, tool: &str, arguments: Value) -> ToolAnswer {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are a JSON object");
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    ToolAnswer::of(peer.call_tool(params).await.expect("tools/call"))
}
