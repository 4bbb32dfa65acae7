//! fleet-api's error answers as a real process over TCP: every one is an RFC 9457 problem
//! (`application/problem+json`, with `type`, `title`, `status`, `detail`, `code`, `field`
//! and `request_id`), on routes the handlers refuse and on those axum answers itself
//! (unknown path, wrong method); the request id is answered on success and error alike and
//! is on the request's log line; a field names the member at fault precisely, an unknown
//! query parameter by its name; and a body not sent as JSON is refused with 415, unread.

use fleet_core::Role;
use fleet_tests::{intent, intent_bytes, op_of, with_amount, ApiProcess, TestFleet};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const REQUEST_ID: &str = "agent-run-42.step:7";

/// A request to the API, not yet sent.
fn to_api(fleet: &TestFleet, api: &ApiProcess, method: Method, path: &str) -> RequestBuilder {
    fleet.http.request(method, api.url(path))
}

/// Sends `request`: the answer.
async fn sent(request: RequestBuilder) -> Response {
    request.send().await.unwrap()
}

/// The value of the answer's header `name`, which it must carry.
fn header(response: &Response, name: &str) -> String {
    response.headers()[name].to_str().unwrap().to_owned()
}

/// The answer to alice, an approver of the tenant, rejecting `op` with `body` sent as
/// `content_type`.
async fn rejected_by_alice(
    fleet: &TestFleet,
    api: &ApiProcess,
    op: &str,
    content_type: &str,
    body: String,
) -> Response {
    let approver = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let path = format!("/v1/operations/{op}/reject");
    let request = to_api(fleet, api, Method::POST, &path)
        .bearer_auth(&approver)
        .header("content-type", content_type)
        .body(body);
    sent(request).await
}

async fn fleet_with_api() -> (TestFleet, ApiProcess, String) {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let token = fleet.token("problem-bot", Role::Agent, &[TENANT]).await;
    (fleet, api, token)
}

/// The answer's status, headers and body; the body must be a problem of `status` and
/// `code` whose `request_id` is the one the header answers. Returns the problem.
async fn problem(response: Response, status: StatusCode, code: &str) -> Value {
    assert_eq!(response.status(), status, "{code}");
    let content_type = header(&response, "content-type");
    assert_eq!(content_type, "application/problem+json", "{code}");
    let header_id = header(&response, "x-request-id");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], format!("/docs/api.md#error-{code}"), "{body}");
    assert_eq!(body["status"], status.as_u16(), "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert!(
        body["title"].as_str().is_some_and(|t| !t.is_empty()),
        "{body}"
    );
    assert!(
        body["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "{body}"
    );
    assert_eq!(body["request_id"], header_id, "{body}");
    assert_eq!(body["error"]["code"], code, "the deprecated member: {body}");
    body
}

#[tokio::test]
async fn an_unknown_path_is_a_404_problem() {
    let (fleet, api, token) = fleet_with_api().await;
    let response = sent(to_api(&fleet, &api, Method::GET, "/v2/nowhere").bearer_auth(&token)).await;
    problem(response, StatusCode::NOT_FOUND, "not_found").await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_method_the_route_does_not_take_is_a_405_problem_with_allow() {
    let (fleet, api, token) = fleet_with_api().await;
    let response =
        sent(to_api(&fleet, &api, Method::DELETE, "/v1/intents").bearer_auth(&token)).await;
    let allow = header(&response, "allow");
    assert!(allow.contains("POST"), "{allow}");
    let body = problem(
        response,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await;
    assert_eq!(body["field"], Value::Null);
    fleet.stop().await;
}

#[tokio::test]
async fn a_body_over_64_kib_is_a_413_problem() {
    let (fleet, api, token) = fleet_with_api().await;
    let mut huge = intent();
    huge["rationale"] = json!("x".repeat(100 * 1024));
    let response = api.submit(&fleet.http, &token, &huge).await;
    problem(response, StatusCode::PAYLOAD_TOO_LARGE, "oversized").await;
    // A decision's body is bounded the same way.
    let long = format!("{{\"reason\": \"{}\"}}", "x".repeat(100 * 1024));
    let op = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";
    let response = rejected_by_alice(&fleet, &api, op, "application/json", long).await;
    problem(response, StatusCode::PAYLOAD_TOO_LARGE, "oversized").await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_text_plain_body_is_refused_with_a_415_problem_and_nothing_is_written() {
    let (fleet, api, token) = fleet_with_api().await;
    let i = intent();
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut request = fleet
            .http
            .post(api.url("/v1/intents"))
            .bearer_auth(&token)
            .body(intent_bytes(&i));
        if let Some(t) = content_type {
            request = request.header("content-type", t);
        }
        let response = request.send().await.unwrap();
        problem(
            response,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        )
        .await;
    }
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);
    // The same intent sent as JSON is stored: the body was refused for its type alone.
    api.submitted(&fleet.http, &token, &i).await;
    let body = "{\"reason\": \"wrong payee\"}".to_owned();
    let response = rejected_by_alice(&fleet, &api, &op_of(&i), "text/plain", body).await;
    problem(
        response,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_amount_of_the_wrong_type_is_a_422_problem_naming_payload_amount_minor() {
    let (fleet, api, token) = fleet_with_api().await;
    for amount in [json!("12500"), json!(12500.5), json!(null), json!(0)] {
        let response = api
            .submit(&fleet.http, &token, &with_amount(intent(), amount.clone()))
            .await;
        let body = problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field").await;
        assert_eq!(body["field"], "payload.amount_minor", "{amount}");
        assert!(
            !body["detail"].as_str().unwrap().contains("12500"),
            "the detail quotes the value: {body}"
        );
    }
    // A missing member is named too, and so is a member of the envelope.
    let mut missing = intent();
    missing["payload"]
        .as_object_mut()
        .unwrap()
        .remove("currency");
    let response = api.submit(&fleet.http, &token, &missing).await;
    let body = problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field").await;
    assert_eq!(body["field"], "payload.currency");
    let mut ttl = intent();
    ttl["approval_ttl_seconds"] = json!("3600");
    let response = api.submit(&fleet.http, &token, &ttl).await;
    let body = problem(response, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field").await;
    assert_eq!(body["field"], "approval_ttl_seconds");
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);
    fleet.stop().await;
}

#[tokio::test]
async fn an_unknown_query_parameter_is_a_400_problem_naming_it() {
    let (fleet, api, token) = fleet_with_api().await;
    for (path, field) in [
        ("/v1/operations?sort=asc", json!("sort")),
        ("/v1/operations?limit=5&limit=6", json!("limit")),
        (
            "/v1/operations/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8?wait=final",
            json!("wait"),
        ),
        // A name that is no plain identifier is not repeated.
        ("/v1/operations?a%0Ab=1", Value::Null),
    ] {
        let response = sent(to_api(&fleet, &api, Method::GET, path).bearer_auth(&token)).await;
        let body = problem(response, StatusCode::BAD_REQUEST, "invalid_query").await;
        assert_eq!(body["field"], field, "{path}");
    }
    fleet.stop().await;
}

#[tokio::test]
async fn a_request_without_a_token_is_a_401_problem() {
    let (fleet, api, _) = fleet_with_api().await;
    let response = sent(to_api(&fleet, &api, Method::GET, "/v1/operations")).await;
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    fleet.stop().await;
}

#[tokio::test]
async fn the_request_id_is_answered_on_success_and_error_and_is_on_the_log_line() {
    let (fleet, api, token) = fleet_with_api().await;
    // Success: the caller's id comes back as it was sent.
    let ok = sent(
        to_api(&fleet, &api, Method::GET, "/v1/operations")
            .bearer_auth(&token)
            .header("x-request-id", REQUEST_ID),
    )
    .await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(ok.headers()["x-request-id"], REQUEST_ID);
    // No token-free route is left out: the schema has one too, made here.
    let schema = sent(to_api(
        &fleet,
        &api,
        Method::GET,
        "/v1/schemas/intent.v1.json",
    ))
    .await;
    let made = header(&schema, "x-request-id");
    assert!(made.starts_with("req_") && made.len() == 30, "{made}");
    // An error carries the caller's id in its header and its body.
    let refused = sent(
        to_api(
            &fleet,
            &api,
            Method::GET,
            "/v1/operations/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
        )
        .bearer_auth(&token)
        .header("x-request-id", "caller-id-2"),
    )
    .await;
    let body = problem(refused, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(body["request_id"], "caller-id-2");
    // An id that is too long, or has characters outside the set, is replaced.
    for ill_formed in ["x".repeat(65), "a b".to_owned(), "a\"b".to_owned()] {
        let response = sent(
            to_api(&fleet, &api, Method::GET, "/v1/operations")
                .bearer_auth(&token)
                .header("x-request-id", &ill_formed),
        )
        .await;
        let id = response.headers()["x-request-id"].to_str().unwrap();
        assert!(id.starts_with("req_"), "{ill_formed:?} answered as {id}");
    }
    // The log line of each request names its id.
    for (id, status) in [(REQUEST_ID, 200), ("caller-id-2", 404)] {
        fleet_tests::eventually(&format!("the log line of {id}"), || async {
            api.process
                .log_text()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|v| v["message"] == "answered" && v["request_id"] == id)
                .map(|v| assert_eq!(v["status"], status, "{v}"))
        })
        .await;
    }
    fleet.stop().await;
}
