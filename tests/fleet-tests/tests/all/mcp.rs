//! fleet-api's MCP door, driven by the official Rust SDK's MCP client over real HTTP
//! against a real fleet-api process, Postgres, and (for the whole flow) the execute worker
//! and the provider simulator: the tools an agent discovers, a payment proposed, approved
//! and followed to its end, retries, tenants, and refusals.

use std::collections::BTreeSet;
use std::path::Path;

use fleet_core::Role;
use fleet_tests::{
    eventually, ApiProcess, McpAgent, TestFleet, ToolAnswer, NON_LATIN_ID, SPOOFED_IDS,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const OTHER_TENANT: &str = "org_999";
/// Where the console of the test that serves one says it is served.
const PUBLIC_URL: &str = "https://fleet.example.test/ops/";
const PROPOSALS: [&str; 7] = [
    "payment_create",
    "refund_create",
    "crm_deal_create",
    "crm_deal_update",
    "order_status_change",
    "contract_send",
    "charge_create",
];

/// The seed payment, as a `payment_create` call's arguments (no operation id, no tenant:
/// the server assigns the one and the token's only tenant is the other).
fn payment() -> Value {
    json!({
        "payload": {"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"},
        "policy_version": "payments-v3",
        "data_version": "inv_9182@7",
        "approval_ttl_seconds": 3600,
        "rationale": "Invoice is due today and matches PO 5531."
    })
}

fn new_operation_id() -> String {
    format!("op_{}", ulid::Ulid::new())
}

fn intent_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/schemas/intent.v1.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The output schema a tool is listed with.
fn output_schema(tools: &[rmcp::model::Tool], name: &str) -> Value {
    let tool = tools.iter().find(|t| t.name == name).expect(name);
    Value::Object(
        tool.output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{name} has no output schema"))
            .as_ref()
            .clone(),
    )
}

/// `answer` is what `schema` describes (as a client that checks structured content would
/// find it).
fn assert_conforms(schema: &Value, answer: &Value) {
    let validator = jsonschema::draft202012::new(schema).expect("a valid 2020-12 schema");
    let errors: Vec<String> = validator
        .iter_errors(answer)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{answer}");
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

async fn fleet_with_api(env: &[(&str, &str)]) -> (TestFleet, ApiProcess) {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(env).await;
    (fleet, api)
}

/// The agent `billing-bot` of the tenant, connected to the API's MCP endpoint.
async fn billing_bot(fleet: &TestFleet, api: &ApiProcess) -> McpAgent {
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    api.mcp(&token).await.expect("connect")
}

/// The tool's (read-only, destructive, idempotent, open-world) hints.
fn hints(
    tools: &[rmcp::model::Tool],
    name: &str,
) -> (Option<bool>, Option<bool>, Option<bool>, Option<bool>) {
    let tool = tools.iter().find(|t| t.name == name).unwrap();
    let a = tool.annotations.as_ref().expect("annotations");
    (
        a.read_only_hint,
        a.destructive_hint,
        a.idempotent_hint,
        a.open_world_hint,
    )
}

/// `proposed`, a `payment_create` answer, is a new operation pending approval, with the
/// stored view's hash and approval deadline, and a link to its approval page when a
/// console is served at `public_url`: (the answer, its operation id, the view).
async fn a_new_proposal(
    fleet: &TestFleet,
    proposed: ToolAnswer,
    public_url: Option<&str>,
) -> (Value, String, Value) {
    let proposed = proposed.ok();
    let op = proposed["operation_id"].as_str().unwrap().to_owned();
    let view = fleet.view_in_db(&op).await;
    let mut expected = json!({
        "operation_id": op,
        "payload_hash": view["payload_hash"],
        "status": "pending_approval",
        "approval_expires_at": view["approval_expires_at"],
        "created": true,
    });
    if let Some(url) = public_url {
        expected["approval_url"] = json!(format!("{url}console/operations/{op}"));
    }
    assert_eq!(proposed, expected);
    (proposed, op, view)
}

/// A fleet with the API and [`billing_bot`] connected to it: (fleet, API, agent).
async fn billing_bot_on_api() -> (TestFleet, ApiProcess, McpAgent) {
    let (fleet, api) = fleet_with_api(&[]).await;
    let agent = billing_bot(&fleet, &api).await;
    (fleet, api, agent)
}

#[tokio::test]
async fn the_tools_are_listed_with_schemas_from_intent_v1_and_annotations_that_say_the_truth() {
    let (fleet, _api, agent) = billing_bot_on_api().await;
    let tools = agent.tools().await;
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        PROPOSALS
            .into_iter()
            .chain([
                "get_operation",
                "list_operations",
                "list_mandates",
                "mandate_coverage"
            ])
            .collect::<BTreeSet<_>>()
    );
    let file = intent_schema();
    for (tool, def) in PROPOSALS.iter().zip([
        "payment_create",
        "refund_create",
        "deal_create",
        "deal_update",
        "order_status_change",
        "contract_send",
        "charge_create",
    ]) {
        let t = tools.iter().find(|t| t.name == *tool).unwrap();
        assert_eq!(
            hints(&tools, tool),
            (Some(false), Some(true), Some(true), Some(true)),
            "{tool}"
        );
        let description = t.description.as_deref().unwrap();
        assert!(
            description.contains("approval_url") && description.contains("not an approval"),
            "{tool}: {description}"
        );
        let schema = Value::Object(t.input_schema.as_ref().clone());
        let payload = &schema["properties"]["payload"];
        let expected = &file["$defs"][def];
        assert_eq!(
            keys(&payload["properties"]),
            keys(&expected["properties"]),
            "{tool}"
        );
        assert_eq!(
            strings(&payload["required"]),
            strings(&expected["required"]),
            "{tool}"
        );
        assert_eq!(payload["additionalProperties"], json!(false), "{tool}");
        assert_eq!(schema["additionalProperties"], json!(false), "{tool}");
        // What the agent never says: the tool implies it.
        for implied in ["schema", "action", "provider"] {
            assert!(
                schema["properties"].get(implied).is_none(),
                "{tool} {implied}"
            );
        }
        let mut required = strings(&schema["required"]);
        assert!(required.remove("payload") && required.remove("approval_ttl_seconds"));
        assert!(!required.contains("operation_id") && !required.contains("tenant_id"));
        assert_eq!(
            required.contains("target"),
            ["crm_deal_update", "order_status_change"].contains(tool),
            "{tool}"
        );
        if let Some(amount) = payload["properties"].get("amount_minor") {
            assert_eq!(
                (&amount["type"], &amount["minimum"], &amount["maximum"]),
                (
                    &json!("integer"),
                    &json!(1),
                    &json!(9_007_199_254_740_991_i64)
                ),
                "{tool}"
            );
            // The list of codes is intent.v1.json's, referenced, not repeated per tool.
            assert_eq!(
                payload["properties"]["currency"]["pattern"],
                json!("^[A-Z]{3}$"),
                "{tool}"
            );
            assert!(file["$defs"]["currency"]["enum"].is_array());
        }
        // A proposal's answer is said in words (its members are checked where a
        // proposal is answered); no output schema repeats them in every tool.
        assert!(t.output_schema.is_none(), "{tool}");
    }
    // The reads describe their answers with the HTTP API's own types (the answers are
    // checked against them in the test of a proposal that waits to succeeded).
    for (tool, member) in [("get_operation", "status"), ("list_operations", "data")] {
        let output = output_schema(&tools, tool);
        assert!(
            output["properties"].get(member).is_some(),
            "{tool}: {output}"
        );
        assert!(output.get("$defs").is_some(), "{tool}: {output}");
    }
    for tool in ["get_operation", "list_operations"] {
        assert_eq!(
            hints(&tools, tool),
            (Some(true), Some(false), Some(true), Some(false)),
            "{tool}"
        );
    }
    let get = tools.iter().find(|t| t.name == "get_operation").unwrap();
    let wait_for = &get.input_schema["properties"]["wait_for"];
    assert!(
        wait_for.to_string().contains("decision") && wait_for.to_string().contains("final"),
        "{wait_for}"
    );
    assert!(get
        .description
        .as_deref()
        .is_some_and(|d| d.contains("Neither is a failure")));
    assert!(agent
        .server_instructions()
        .is_some_and(|i| i.contains("Nothing happens until that person approves")));
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_order_status_change_is_proposed_with_its_target_and_runs_once_approved() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    let api = fleet.spawn_api(&[]).await;
    let token = fleet.token("fulfilment-bot", Role::Agent, &[TENANT]).await;
    let agent = api.mcp(&token).await.expect("connect");
    let order = fleet.sim_order("paid").await;
    let args = json!({
        "target": order,
        "payload": {"from": "paid", "to": "fulfilled", "reason": "Shipped by carrier"},
        "policy_version": "orders-v1",
        "data_version": format!("{order}@paid"),
        "approval_ttl_seconds": 3600,
    });
    let proposed = agent.call("order_status_change", args).await.ok();
    let op = proposed["operation_id"].as_str().unwrap().to_owned();
    let view = fleet.view_in_db(&op).await;
    assert_eq!(
        (
            &view["action"],
            &view["provider"],
            &view["target"],
            &view["status"]
        ),
        (
            &json!("order.status.change"),
            &json!("orders"),
            &json!(order),
            &json!("not_started")
        )
    );
    assert_eq!(
        fleet
            .approve(&op, proposed["payload_hash"].as_str().unwrap())
            .await
            .ok(),
        Some(true)
    );
    let done = agent
        .call(
            "get_operation",
            json!({"operation_id": op, "wait_for": "final", "timeout_s": 30}),
        )
        .await
        .ok();
    assert_eq!(
        (done["status"].clone(), done["external_id"].clone()),
        (json!("succeeded"), json!(order))
    );
    assert_eq!(
        fleet.sim_get(&format!("/_sim/orders/{order}")).await["last_transition_ref"],
        json!(fleet.reference_of(&op).await)
    );
    // Without its target the tool refuses, with the reason the intent queue would give.
    let refused = agent
        .call("order_status_change", json!({"payload": {"from": "paid", "to": "fulfilled", "reason": "r"}, "policy_version": "orders-v1", "data_version": "d", "approval_ttl_seconds": 60}))
        .await;
    assert_eq!(
        refused.refusal(),
        ("invalid_field".to_owned(), json!("target"))
    );
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_proposed_payment_answers_at_once_with_the_approval_link_and_after_approval_waits_to_succeeded(
) {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    // With a console: the approval link is its page for the operation.
    let issuer = fleet.spawn_issuer().await;
    let api = fleet
        .spawn_console_with(&issuer, &[("API_PUBLIC_URL", PUBLIC_URL)])
        .await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let agent = api.mcp(&token).await.expect("connect");

    let proposed = agent.call("payment_create", payment()).await;
    proposed.says("nothing happens until a person approves");
    let (proposed, op, view) = a_new_proposal(&fleet, proposed, Some(PUBLIC_URL)).await;
    // Stored as the HTTP intake stores it, for the token's only tenant, and not executed.
    assert_eq!(
        (
            &view["tenant_id"],
            &view["action"],
            &view["provider"],
            &view["submitted_by"],
            &view["status"],
            &view["approval_status"]
        ),
        (
            &json!(TENANT),
            &json!("payment.create"),
            &json!("payments"),
            &json!("billing-bot"),
            &json!("not_started"),
            &json!("pending")
        )
    );
    assert_eq!(fleet.sim_effects(&op).await, 0);

    // An agent resumes: it waits for the end, and a person approves meanwhile.
    let peer = agent.peer();
    let waiting_op = op.clone();
    let done = tokio::spawn(async move {
        fleet_tests::mcp_call(
            &peer,
            "get_operation",
            json!({"operation_id": waiting_op, "wait_for": "final", "timeout_s": 60}),
        )
        .await
    });
    let http = fleet.http.clone();
    eventually("the get_operation call to wait", || async {
        (api.gauge(&http, "fleet_api_waiting_requests").await? == 1.0).then_some(())
    })
    .await;
    assert!(!done.is_finished());
    let hash = proposed["payload_hash"].as_str().unwrap();
    // The approver's door: the HTTP API, with an approver's own token (an MCP client's
    // "accept" is not an approval; nothing in the MCP door can approve).
    let approver = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let approved = api
        .post(
            &http,
            &approver,
            &format!("/v1/operations/{op}/approve"),
            &json!({ "payload_hash": hash }),
        )
        .await;
    assert_eq!(approved.status(), StatusCode::OK);
    let done = done.await.unwrap();
    assert!(
        done.texts.iter().any(|t| t.starts_with("Succeeded")),
        "{:?}",
        done.texts
    );
    let done = done.ok();
    assert_eq!(done["status"], json!("succeeded"), "{done}");
    assert_eq!(done["approval_status"], json!("approved"));
    assert!(done["external_id"]
        .as_str()
        .is_some_and(|id| id.starts_with("pay_")));
    assert_eq!(done, fleet.view_in_db(&op).await, "the view, unchanged");
    let tools = agent.tools().await;
    assert_conforms(&output_schema(&tools, "get_operation"), &done);
    assert_eq!(fleet.sim_effects(&op).await, 1);

    // The listing shows it too.
    let listed = agent
        .call(
            "list_operations",
            json!({"status": "succeeded", "limit": 10}),
        )
        .await
        .ok();
    assert_eq!(listed["data"], json!([done]));
    assert_eq!(listed["next_cursor"], Value::Null);
    assert_conforms(&output_schema(&tools, "list_operations"), &listed);
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn without_a_console_a_proposal_hands_out_no_approval_link() {
    // No OpenID Connect issuer configured: no console, so no page to link to.
    let (fleet, _api, agent) = billing_bot_on_api().await;
    let proposed = agent.call("payment_create", payment()).await;
    proposed.says("nothing happens until a person approves");
    proposed.says("no approval page");
    assert!(
        proposed.texts.iter().all(|t| !t.contains("/console/")),
        "{:?}",
        proposed.texts
    );
    a_new_proposal(&fleet, proposed, None).await;
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_second_call_with_the_same_operation_id_creates_nothing_new() {
    let (fleet, _api, agent) = billing_bot_on_api().await;
    let op = new_operation_id();
    let mut args = payment();
    args["operation_id"] = json!(op);
    let first = agent.call("payment_create", args.clone()).await.ok();
    assert_eq!(
        (&first["operation_id"], &first["created"]),
        (&json!(op), &json!(true))
    );
    // A retried call, worded differently where the wording is not approved.
    args["rationale"] = json!("retrying after a lost answer");
    let again = agent.call("payment_create", args.clone()).await;
    again.says("nothing new was created");
    let again = again.ok();
    assert_eq!(again["created"], json!(false));
    let mut same = again.clone();
    same["created"] = json!(true);
    assert_eq!(same, first, "the same operation, the same answer");
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 1);
    assert_eq!(
        fleet.count("SELECT count(*) FROM operation_events").await,
        1,
        "one prepared event"
    );
    // The same id for other content is refused, and the stored operation is untouched.
    let before = fleet.view_in_db(&op).await;
    args["payload"]["amount_minor"] = json!(1_250_001);
    let conflict = agent.call("payment_create", args).await;
    assert_eq!(
        conflict.refusal(),
        ("operation_id_conflict".to_owned(), json!("operation_id"))
    );
    assert_eq!(fleet.view_in_db(&op).await, before);
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 1);
    agent.close().await;
    fleet.stop().await;
}

/// A framework that retries a tool call (a lost answer, a model that calls again) sends
/// no operation id either time: the id is derived from the proposal, so the second call
/// is the first operation, never a second payment. Another payload is another operation,
/// and so is the same payload under an operation id of the agent's own.
#[tokio::test]
async fn the_same_proposal_twice_without_an_operation_id_is_one_operation() {
    let (fleet, _api, agent) = billing_bot_on_api().await;
    let first = agent.call("payment_create", payment()).await.ok();
    assert_eq!(first["created"], json!(true));
    let op = first["operation_id"].as_str().unwrap().to_owned();
    let arguments = payment().as_object().unwrap().clone();
    assert_eq!(
        op,
        fleet_core::intent::derived_id::derived_operation_id(
            fleet_core::Action::PaymentCreate,
            TENANT,
            &arguments
        ),
        "the documented derivation"
    );
    let mut retried = payment();
    retried["rationale"] = json!("calling again: the first answer was lost");
    retried["operation_id"] = Value::Null;
    let again = agent.call("payment_create", retried).await;
    again.says("nothing new was created");
    let again = again.ok();
    assert_eq!(
        (&again["operation_id"], &again["created"]),
        (&json!(op), &json!(false))
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 1);

    let mut other = payment();
    other["payload"]["amount_minor"] = json!(1_250_001);
    let other = agent.call("payment_create", other).await.ok();
    assert_eq!(other["created"], json!(true));
    assert_ne!(other["operation_id"], json!(op));
    let mut on_purpose = payment();
    on_purpose["operation_id"] = json!(new_operation_id());
    let on_purpose = agent.call("payment_create", on_purpose).await.ok();
    assert_eq!(on_purpose["created"], json!(true));
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 3);
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn another_tenant_is_refused_and_a_request_without_a_valid_token_is_401() {
    let (fleet, api) = fleet_with_api(&[]).await;
    let owner = fleet.token("agent-a", Role::Agent, &[TENANT]).await;
    let stranger = fleet.token("agent-b", Role::Agent, &[OTHER_TENANT]).await;
    let approver = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let two_tenants = fleet
        .token("agent-c", Role::Agent, &[TENANT, "org_483"])
        .await;
    let owners = api.mcp(&owner).await.expect("connect");
    let op = owners.call("payment_create", payment()).await.ok()["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let theirs = api.mcp(&stranger).await.expect("connect");
    // Another tenant's operation is not found, exactly like one that does not exist.
    for id in [op.clone(), new_operation_id()] {
        let read = theirs
            .call("get_operation", json!({"operation_id": id}))
            .await;
        assert_eq!(read.refusal(), ("not_found".to_owned(), Value::Null));
    }
    let waited = theirs
        .call(
            "get_operation",
            json!({"operation_id": op, "wait_for": "final", "timeout_s": 1}),
        )
        .await;
    assert_eq!(waited.refusal(), ("not_found".to_owned(), Value::Null));
    let listed = theirs.call("list_operations", json!({})).await.ok();
    assert_eq!(listed["data"], json!([]));
    // Proposing for a tenant not granted writes nothing.
    let mut args = payment();
    args["tenant_id"] = json!(TENANT);
    let refused = theirs.call("payment_create", args.clone()).await;
    assert_eq!(
        refused.refusal(),
        ("tenant_not_granted".to_owned(), Value::Null)
    );
    // Only agents propose; a principal of several tenants says which.
    let approvers = api.mcp(&approver).await.expect("connect");
    let refused = approvers.call("payment_create", args).await;
    assert_eq!(
        refused.refusal(),
        ("role_not_allowed".to_owned(), Value::Null)
    );
    assert_eq!(
        approvers
            .call("get_operation", json!({"operation_id": op}))
            .await
            .ok()["operation_id"],
        json!(op)
    );
    let several = api.mcp(&two_tenants).await.expect("connect");
    let refused = several.call("payment_create", payment()).await;
    assert_eq!(
        refused.refusal(),
        ("invalid_field".to_owned(), json!("tenant_id"))
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 1);

    // No token, a malformed one, one nobody issued: the API's 401, before MCP is spoken.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "0"}}});
    let unissued = format!("fleet_{}", "0".repeat(64));
    for auth in [
        None,
        Some("Bearer nonsense".to_owned()),
        Some(format!("Bearer {unissued}")),
    ] {
        let mut request = fleet
            .http
            .post(api.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(a) = &auth {
            request = request.header("authorization", a);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], json!("unauthorized"));
    }
    assert!(
        api.mcp(&unissued).await.is_err(),
        "the SDK's client is refused too"
    );
    for agent in [owners, theirs, approvers, several] {
        agent.close().await;
    }
    fleet.stop().await;
}

#[tokio::test]
async fn a_proposal_whose_id_would_show_as_another_is_refused_naming_the_field() {
    let (fleet, _api, agent) = billing_bot_on_api().await;
    for (member, field, value) in SPOOFED_IDS {
        let mut args = payment();
        args["payload"][member] = json!(value);
        let answer = agent.call("payment_create", args).await;
        assert_eq!(
            answer.refusal(),
            ("invalid_field".to_owned(), json!(field)),
            "{value:?}"
        );
    }
    assert_eq!(
        fleet.count("SELECT count(*) FROM operations").await,
        0,
        "nothing is written for a refused id"
    );
    fleet.directory_holds(NON_LATIN_ID).await;
    let mut greek = payment();
    greek["payload"]["beneficiary_id"] = json!(NON_LATIN_ID);
    let proposed = agent.call("payment_create", greek).await.ok();
    let op = proposed["operation_id"].as_str().expect("an operation id");
    assert_eq!(
        fleet.view_in_db(op).await["payload"]["beneficiary_id"],
        json!(NON_LATIN_ID),
        "an id in one other script is accepted"
    );
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn refused_input_is_a_tool_error_with_the_dead_letter_reason_and_writes_nothing() {
    // A key retention of an hour refuses approvals of an hour or more; a CRM without
    // conditional updates refuses deal updates: the capability guard, as for the queue.
    let (fleet, api) = fleet_with_api(&[
        ("PAYMENTS_KEY_RETENTION_S", "3600"),
        ("CRM_CAPABILITIES", "lookup"),
    ])
    .await;
    let agent = billing_bot(&fleet, &api).await;
    let with = |path: &[&str], value: Value| {
        let mut args = payment();
        let mut at = &mut args;
        for p in &path[..path.len() - 1] {
            at = &mut at[*p];
        }
        at[path[path.len() - 1]] = value;
        args
    };
    let cases: Vec<(&str, Value, &str, Value)> = vec![
        (
            "payment_create",
            with(&["payload", "amount_minor"], json!(0)),
            "invalid_field",
            json!("payload.amount_minor"),
        ),
        (
            "payment_create",
            with(&["payload", "currency"], json!("kzt")),
            "invalid_field",
            json!("payload.currency"),
        ),
        (
            "payment_create",
            with(
                &["payload", "amount_minor"],
                json!(9_007_199_254_740_992_u64),
            ),
            "number_out_of_range",
            json!("payload.amount_minor"),
        ),
        (
            "payment_create",
            with(&["rationale"], json!("due\u{0}today")),
            "nul_character",
            json!("rationale"),
        ),
        (
            "payment_create",
            with(&["operation_id"], json!("op_not_a_ulid")),
            "invalid_field",
            json!("operation_id"),
        ),
        (
            "payment_create",
            with(&["action"], json!("refund.create")),
            "invalid_field",
            json!("action"),
        ),
        (
            "payment_create",
            with(&["approval_ttl_seconds"], json!(3600)),
            "approval_outlives_key",
            json!("provider"),
        ),
        (
            "crm_deal_update",
            json!({
                "target": "deal_7",
                "payload": {"expected_version": 3, "patch": {"stage": "won"}},
                "policy_version": "crm-v1", "data_version": "deal_7@3", "approval_ttl_seconds": 600
            }),
            "provider_cannot_update_conditionally",
            json!("provider"),
        ),
    ];
    for (tool, args, code, field) in cases {
        let answer = agent.call(tool, args).await;
        assert_eq!(answer.refusal(), (code.to_owned(), field), "{tool} {code}");
    }
    // A float amount: refused as the queue refuses it, the member named.
    let float = agent
        .call(
            "payment_create",
            with(&["payload", "amount_minor"], json!(12500.5)),
        )
        .await;
    assert_eq!(
        float.refusal(),
        ("invalid_field".to_owned(), json!("payload.amount_minor"))
    );
    // Arguments a read cannot use.
    let bad_wait = agent
        .call(
            "get_operation",
            json!({"operation_id": new_operation_id(), "wait_for": "final", "timeout_s": 61}),
        )
        .await;
    assert_eq!(
        bad_wait.refusal(),
        ("invalid_arguments".to_owned(), json!("timeout_s"))
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);
    // And the same proposal within the limits is taken.
    let taken = agent
        .call(
            "payment_create",
            with(&["approval_ttl_seconds"], json!(600)),
        )
        .await
        .ok();
    assert_eq!(taken["status"], json!("pending_approval"));
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn no_tool_argument_or_token_reaches_the_apis_log_even_at_trace() {
    const PAN: &str = "4111111111111111";
    let (fleet, api) = fleet_with_api(&[("RUST_LOG", "trace")]).await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let agent = api.mcp(&token).await.expect("connect");
    // A proposal whose beneficiary is a card number, read back; and a refused one.
    fleet
        .sim_payee(PAN, "Card holder", "KZ86 125K ZT50 0410 0100")
        .await;
    let mut carded = payment();
    carded["payload"]["beneficiary_id"] = json!(PAN);
    let op = agent.call("payment_create", carded.clone()).await.ok()["operation_id"].clone();
    let view = agent
        .call("get_operation", json!({"operation_id": op}))
        .await
        .ok();
    assert_eq!(view["payload"]["beneficiary_id"], json!(PAN));
    carded["payload"]["currency"] = json!("kzt");
    assert_eq!(
        agent.call("payment_create", carded).await.refusal().0,
        "invalid_field"
    );
    agent.close().await;
    let log = api.process.log_text();
    // Positive control: the lines scanned are the API's, about this operation.
    assert!(
        log.contains(op.as_str().unwrap()),
        "the log names the operation"
    );
    assert!(log.contains("mcp tool called"));
    for line in log.lines() {
        for canary in [PAN, &token[6..], "Bearer "] {
            assert!(
                !line.contains(canary),
                "the API logged a canary ({canary}): {line}"
            );
        }
    }
    fleet.stop().await;
}

#[tokio::test]
async fn a_message_that_is_no_json_rpc_gets_json_rpcs_own_error_in_json() {
    let (fleet, api) = fleet_with_api(&[]).await;
    let token = fleet
        .token("mcp-framing", fleet_core::Role::Agent, &["org_482"])
        .await;
    let post = |content_type: &'static str, body: &'static str| {
        fleet
            .http
            .post(api.url("/mcp"))
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    for (content_type, body, status, code) in [
        (
            "application/json",
            "{\"jsonrpc\": \"2.0\", \"id\": 1,",
            400,
            -32700,
        ),
        ("application/json", "not json", 400, -32700),
        (
            "application/json",
            "{\"id\": 1, \"method\": \"tools/list\"}",
            400,
            -32600,
        ),
        ("application/json", "42", 400, -32600),
        (
            "text/plain",
            "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}",
            415,
            -32600,
        ),
    ] {
        let response = post(content_type, body).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{body}");
        assert!(response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json"));
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["jsonrpc"], json!("2.0"), "{body}");
        assert_eq!(answer["id"], Value::Null);
        assert_eq!(answer["error"]["code"], json!(code), "{body}: {answer}");
    }
    // A well-formed message still reaches the server.
    let agent = api.mcp(&token).await.unwrap();
    assert!(agent.server_instructions().is_some_and(
        |text| text.contains("order_status_change") && text.contains("list_operations")
    ));
    agent.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn the_tool_list_costs_under_16_kib_and_a_bad_argument_names_its_member() {
    let (fleet, api) = fleet_with_api(&[]).await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    // The whole answer to tools/list, as the bytes an agent's client receives.
    let response = fleet
        .http
        .post(api.url("/mcp"))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-06-18")
        .body("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.bytes().await.unwrap();
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        list["result"]["tools"].as_array().map(Vec::len),
        Some(PROPOSALS.len() + 4),
        "{list}"
    );
    assert!(body.len() < 16 * 1024, "tools/list is {} bytes", body.len());
    let text = String::from_utf8_lossy(&body);
    assert!(
        !text.contains("u034f"),
        "the identifier pattern is said once, elsewhere"
    );
    // A bad argument is named by its path below the arguments, wherever it is.
    let agent = api.mcp(&token).await.expect("connect");
    let mut wrong = payment();
    wrong["payload"]["amount_minor"] = json!("oops");
    assert_eq!(
        agent.call("payment_create", wrong).await.refusal(),
        ("invalid_field".to_owned(), json!("payload.amount_minor"))
    );
    let mut misplaced = payment();
    misplaced["amount_minor"] = json!(5);
    assert_eq!(
        agent.call("payment_create", misplaced).await.refusal(),
        ("invalid_field".to_owned(), json!("amount_minor"))
    );
    for (args, field) in [
        (
            json!({"operation_id": new_operation_id(), "wait_for": "soon"}),
            "wait_for",
        ),
        (json!({"operation_id": 7}), "operation_id"),
        (
            json!({"operation_id": new_operation_id(), "colour": 1}),
            "colour",
        ),
        (json!({}), "operation_id"),
    ] {
        assert_eq!(
            agent.call("get_operation", args.clone()).await.refusal(),
            ("invalid_arguments".to_owned(), json!(field)),
            "{args}"
        );
    }
    assert_eq!(
        agent
            .call("list_operations", json!({"limit": "ten"}))
            .await
            .refusal(),
        ("invalid_arguments".to_owned(), json!("limit"))
    );
    agent.close().await;
    fleet.stop().await;
}
