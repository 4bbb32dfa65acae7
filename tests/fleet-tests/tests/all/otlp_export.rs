//! Span export over OTLP, through the real processes: with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! pointing at a receiver on loopback (this test's, decoding the OTLP/HTTP protobuf
//! requests), an intent sent with a W3C `traceparent` reaches the receiver as spans of the
//! agent's trace from `fleet-api` (the request's span, continuing the span its log lines
//! name) and from `fleet-execute` (the operation's span). An endpoint where nothing listens changes
//! nothing for the work: the intent is accepted and paid all the same.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use fleet_core::{Role, Status};
use fleet_tests::{eventually, hash_of, intent, intent_bytes, op_of, ApiProcess, TestFleet};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value;
use prost::Message;
use serde_json::Value;

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const AGENT_SPAN: &str = "b7ad6b7169203331";

/// One exported span, as the receiver saw it.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    name: String,
    trace_id: String,
    parent_span_id: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `service.name` of an exported resource ("" when absent).
fn service_of(resource: Option<&opentelemetry_proto::tonic::resource::v1::Resource>) -> String {
    resource
        .into_iter()
        .flat_map(|r| &r.attributes)
        .filter(|kv| kv.key == "service.name")
        .find_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// `POST /v1/traces`: decodes the export request and keeps its spans. A body that is not
/// an export request is refused, so a wrong encoding fails the test rather than passing
/// unseen.
async fn receive(
    State(seen): State<Arc<Mutex<Vec<Received>>>>,
    body: Bytes,
) -> Result<Vec<u8>, axum::http::StatusCode> {
    let request =
        ExportTraceServiceRequest::decode(body).map_err(|_| axum::http::StatusCode::BAD_REQUEST)?;
    let mut seen = seen.lock().unwrap();
    for resource_spans in &request.resource_spans {
        let service = service_of(resource_spans.resource.as_ref());
        for span in resource_spans.scope_spans.iter().flat_map(|s| &s.spans) {
            seen.push(Received {
                service: service.clone(),
                name: span.name.clone(),
                trace_id: hex(&span.trace_id),
                parent_span_id: hex(&span.parent_span_id),
            });
        }
    }
    Ok(ExportTraceServiceResponse::default().encode_to_vec())
}

/// An OTLP/HTTP receiver on a free loopback port: its base URL and what it was sent.
async fn otlp_receiver() -> (String, Arc<Mutex<Vec<Received>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/v1/traces", post(receive))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// The workers' export settings: the receiver, and a short batch delay so that spans
/// arrive within the test's deadline.
fn export_to(endpoint: &str) -> [(&'static str, &str); 2] {
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]
}

/// Submits `intent` over HTTP under the agent's `traceparent`, which must be accepted.
async fn submit_traced(fleet: &TestFleet, api: &ApiProcess, intent: &Value) {
    let token = fleet.token("otlp-bot", Role::Agent, &["org_482"]).await;
    let answer = fleet
        .http
        .post(api.url("/v1/intents"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .header("traceparent", format!("00-{TRACE_ID}-{AGENT_SPAN}-01"))
        .body(intent_bytes(intent))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202, "{}", answer.text().await.unwrap());
}

/// The span ids of the API's log lines in the agent's trace.
fn logged_span_ids(api: &ApiProcess) -> Vec<String> {
    api.process
        .log_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["span"]["trace_id"] == TRACE_ID)
        .filter_map(|l| l["span"]["span_id"].as_str().map(str::to_owned))
        .collect()
}

/// The received spans of the agent's trace from `service` named `name`, once there is one.
async fn spans_of(seen: &Arc<Mutex<Vec<Received>>>, service: &str, name: &str) -> Vec<Received> {
    eventually(
        &format!("a {name} span of trace {TRACE_ID} from {service}"),
        || async {
            let spans: Vec<Received> = seen
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.service == service && s.name == name && s.trace_id == TRACE_ID)
                .cloned()
                .collect();
            (!spans.is_empty()).then_some(spans)
        },
    )
    .await
}

#[tokio::test]
async fn the_workers_export_their_spans_in_the_agents_trace_to_the_otlp_endpoint() {
    let fleet = TestFleet::start().await;
    let (endpoint, seen) = otlp_receiver().await;
    let settings = export_to(&endpoint);
    let api = fleet.spawn_api(&settings).await;
    let _execute = fleet.spawn_process("fleet-execute", &settings);
    let i = intent();
    submit_traced(&fleet, &api, &i).await;

    // The request's exported span continues the fleet's own span of the request: the
    // span id its log lines carry (a new span of the agent's trace, child of the agent's).
    let requests = spans_of(&seen, "fleet-api", "request").await;
    let logged = logged_span_ids(&api);
    assert!(
        requests.iter().any(|s| logged.contains(&s.parent_span_id)),
        "the API's request span continues a span its log lines name ({logged:?}): {requests:?}"
    );
    let op = op_of(&i);
    fleet.approve(&op, &hash_of(&i)).await.expect("approved");
    spans_of(&seen, "fleet-execute", "operation").await;
    fleet.reaches(&op, Status::Succeeded).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_otlp_endpoint_where_nothing_listens_changes_nothing_for_the_work() {
    let fleet = TestFleet::start().await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let settings = export_to(&closed);
    let api = fleet.spawn_api(&settings).await;
    let _execute = fleet.spawn_process("fleet-execute", &settings);
    let i = intent();
    submit_traced(&fleet, &api, &i).await;
    let op = op_of(&i);
    fleet.approve(&op, &hash_of(&i)).await.expect("approved");
    fleet.reaches(&op, Status::Succeeded).await;
    fleet.stop().await;
}
