//! The payments adapter against a tiny in-test HTTP server: every transport outcome maps
//! to the right `CallResult`, nothing is ever sent twice, and the key never prints.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use fleet_core::classify_payment;
use fleet_core::outcome::{CallResult, NoAnswerKind, Outcome, ProviderAnswer};
use fleet_providers::{Endpoint, LookupError, PaymentRequest, PaymentsClient, RefundRequest};
use fleet_runtime::Secret;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const API_KEY: &str = "sk_test_do_not_print_4242";

/// What the server saw of each request.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    idempotency_key: Option<String>,
    body: Value,
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Seen>>>);

impl Log {
    fn record(&self, path: &str, headers: &HeaderMap, body: Value) {
        let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
        self.0.lock().unwrap().push(Seen {
            path: path.to_owned(),
            authorization: header("authorization"),
            idempotency_key: header("idempotency-key"),
            body,
        });
    }

    fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

async fn serve(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

fn client(base_url: &str, timeout_ms: u64) -> PaymentsClient {
    PaymentsClient::new(Endpoint {
        base_url: base_url.to_owned(),
        api_key: Secret::new(API_KEY.to_owned()),
        timeout_ms,
    })
    .unwrap()
}

fn payment_request() -> PaymentRequest {
    PaymentRequest {
        amount_minor: 1_250_000,
        currency: "KZT".into(),
        beneficiary_id: "vendor_77".into(),
        invoice_id: "inv_9182".into(),
        reference: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        beneficiary_version: None,
    }
}

fn payment_object(status: &str) -> Value {
    json!({"id": "pay_1", "status": status, "amount_minor": 1_250_000, "currency": "KZT",
           "beneficiary_id": "vendor_77", "invoice_id": "inv_9182",
           "reference": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8", "created_at": "2026-01-01T00:00:00Z"})
}

/// The one request the server saw: anything else means the adapter sent twice or not at all.
fn only_request(log: &Log) -> Seen {
    let seen = log.all();
    assert_eq!(seen.len(), 1, "exactly one request must be sent: {seen:?}");
    seen.into_iter().next().unwrap()
}

/// The call classifies as a success naming `external_id`.
fn assert_succeeded(call: &CallResult, external_id: &str) {
    assert_eq!(
        classify_payment(call),
        Outcome::Succeeded {
            external_id: external_id.into()
        }
    );
}

/// A server whose POST /v1/payments always gives `status`, `headers` and `body`.
async fn answering(
    status: u16,
    headers: Vec<(&'static str, &'static str)>,
    body: Value,
) -> (String, Log) {
    let log = Log::default();
    let router = Router::new()
        .route(
            "/v1/payments",
            post(
                move |State(log): State<Log>, h: HeaderMap, Json(req): Json<Value>| {
                    let headers = headers.clone();
                    let body = body.clone();
                    async move {
                        log.record("/v1/payments", &h, req);
                        let mut response =
                            (StatusCode::from_u16(status).unwrap(), Json(body)).into_response();
                        for (name, value) in headers {
                            response.headers_mut().insert(name, value.parse().unwrap());
                        }
                        response
                    }
                },
            ),
        )
        .with_state(log.clone());
    (serve(router).await, log)
}

#[tokio::test]
async fn created_payment_is_parsed_and_sent_with_key_and_bearer() {
    let (base, log) = answering(
        201,
        vec![("request-id", "req_abc")],
        payment_object("succeeded"),
    )
    .await;
    let call = client(&base, 5_000)
        .create_payment("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8", &payment_request())
        .await;

    assert_eq!(
        call,
        CallResult::Answer(ProviderAnswer {
            status: 201,
            replayed: false,
            request_id: Some("req_abc".into()),
            retry_after: None,
            should_retry: None,
            body: payment_object("succeeded"),
        })
    );
    assert_succeeded(&call, "pay_1");
    let seen = only_request(&log);
    assert_eq!(
        seen.authorization.as_deref(),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    assert_eq!(
        seen.idempotency_key.as_deref(),
        Some("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8")
    );
    assert_eq!(
        seen.body,
        json!({"amount_minor": 1_250_000, "currency": "KZT", "beneficiary_id": "vendor_77",
               "invoice_id": "inv_9182", "reference": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"})
    );
}

#[tokio::test]
async fn idempotent_replayed_header_is_reported() {
    let headers = vec![("idempotent-replayed", "true"), ("request-id", "req_2")];
    let (base, _) = answering(201, headers, payment_object("pending")).await;
    let call = pay_op_k(&base, 5_000).await;
    let CallResult::Answer(answer) = &call else {
        panic!("expected an answer, got {call:?}")
    };
    assert!(answer.replayed);
    assert_eq!(
        classify_payment(&call),
        Outcome::Accepted {
            external_id: Some("pay_1".into())
        }
    );
}

#[tokio::test]
async fn business_rejection_body_is_parsed() {
    let body = json!({"error": {"type": "payment_rejected", "code": "account_closed"}});
    let (base, _) = answering(402, vec![], body.clone()).await;
    let call = pay_op_k(&base, 5_000).await;
    let CallResult::Answer(answer) = &call else {
        panic!("expected an answer, got {call:?}")
    };
    assert_eq!(
        (answer.status, answer.replayed, &answer.body),
        (402, false, &body)
    );
    assert_eq!(
        classify_payment(&call),
        Outcome::Failed {
            code: "account_closed".into()
        }
    );
}

#[tokio::test]
async fn server_error_is_an_answer_and_is_not_retried() {
    let (base, log) = answering(500, vec![], json!({"error": {"type": "api_error"}})).await;
    let call = pay_op_k(&base, 5_000).await;
    assert!(
        matches!(&call, CallResult::Answer(a) if a.status == 500),
        "{call:?}"
    );
    assert!(matches!(classify_payment(&call), Outcome::Unknown { .. }));
    assert_eq!(log.all().len(), 1, "a 500 must not be retried");
}

#[tokio::test]
async fn a_non_json_body_becomes_null() {
    let router = Router::new().route(
        "/v1/payments",
        post(|| async { (StatusCode::BAD_GATEWAY, "<html>bad gateway</html>") }),
    );
    let base = serve(router).await;
    let call = pay_op_k(&base, 5_000).await;
    assert_eq!(
        call,
        CallResult::Answer(ProviderAnswer {
            status: 502,
            replayed: false,
            request_id: None,
            retry_after: None,
            should_retry: None,
            body: Value::Null
        })
    );
}

#[tokio::test]
async fn no_answer_within_the_timeout_is_timeout_and_sent_once() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let router = Router::new().route(
        "/v1/payments",
        post(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            // Never answers: the client's timeout must end the call.
            std::future::pending::<StatusCode>()
        }),
    );
    let base = serve(router).await;
    let call = pay_op_k(&base, 300).await;
    assert_eq!(call, no_answer(NoAnswerKind::Timeout));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn connection_refused_is_not_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let call = pay_op_k(&format!("http://{addr}"), 5_000).await;
    let CallResult::NotSent { detail } = &call else {
        panic!("expected NotSent, got {call:?}")
    };
    assert!(detail.starts_with("connect:"), "{detail}");
    assert!(matches!(
        classify_payment(&call),
        Outcome::NotExecuted { .. }
    ));
}

#[tokio::test]
async fn connection_closed_without_an_answer_is_reset_and_not_retried() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            counter.fetch_add(1, Ordering::SeqCst);
            read_request(&mut socket).await;
            drop(socket);
        }
    });
    let call = pay_op_k(&format!("http://{addr}"), 5_000).await;
    assert_eq!(call, no_answer(NoAnswerKind::Reset));
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "the request must not be re-sent"
    );
}

/// A 201 whose body stops at a tenth of its announced length.
const TRUNCATED_CREATED: &str =
    "HTTP/1.1 201 Created\r\ncontent-length: 100\r\n\r\n{\"id\": \"pay_";

fn no_answer(kind: NoAnswerKind) -> CallResult {
    CallResult::NoAnswer { kind }
}

/// The payment of `op_k` asked of the provider at `base`, within `timeout_ms`.
async fn pay_op_k(base: &str, timeout_ms: u64) -> CallResult {
    client(base, timeout_ms)
        .create_payment("op_k", &payment_request())
        .await
}

/// Takes the whole request off `socket`: it ends with the JSON body's closing brace.
async fn read_request(socket: &mut TcpStream) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.ends_with(b"}") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
}

/// A raw server that reads the request, writes `head` and then either hangs up or hangs.
async fn raw_server(head: &'static str, hang: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        read_request(&mut socket).await;
        socket.write_all(head.as_bytes()).await.unwrap();
        if hang {
            std::future::pending::<()>().await;
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_truncated_body_is_reset() {
    let base = raw_server(TRUNCATED_CREATED, false).await;
    let call = pay_op_k(&base, 5_000).await;
    assert_eq!(call, no_answer(NoAnswerKind::Reset));
}

#[tokio::test]
async fn a_body_that_stalls_past_the_timeout_is_timeout() {
    let base = raw_server(TRUNCATED_CREATED, true).await;
    let call = pay_op_k(&base, 300).await;
    assert_eq!(call, no_answer(NoAnswerKind::Timeout));
}

#[tokio::test]
async fn redirects_are_answers_not_followed() {
    let followed = Arc::new(AtomicUsize::new(0));
    let counter = followed.clone();
    let router = Router::new()
        .route(
            "/v1/payments",
            post(|| async { (StatusCode::TEMPORARY_REDIRECT, [("location", "/elsewhere")]) }),
        )
        .route(
            "/elsewhere",
            post(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async { StatusCode::CREATED }
            }),
        );
    let base = serve(router).await;
    let call = pay_op_k(&base, 5_000).await;
    assert!(
        matches!(&call, CallResult::Answer(a) if a.status == 307),
        "{call:?}"
    );
    assert_eq!(followed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_unsendable_key_is_not_sent() {
    let (base, log) = answering(201, vec![], payment_object("succeeded")).await;
    let call = client(&base, 5_000)
        .create_payment("op_bad\nkey", &payment_request())
        .await;
    assert!(matches!(call, CallResult::NotSent { .. }), "{call:?}");
    assert!(log.all().is_empty());
}

#[tokio::test]
async fn refunds_go_to_their_own_endpoint() {
    let log = Log::default();
    let router = Router::new()
        .route(
            "/v1/refunds",
            post(
                |State(log): State<Log>, h: HeaderMap, Json(req): Json<Value>| async move {
                    log.record("/v1/refunds", &h, req);
                    (
                        StatusCode::CREATED,
                        Json(json!({"id": "re_1", "status": "succeeded"})),
                    )
                },
            ),
        )
        .with_state(log.clone());
    let base = serve(router).await;
    let refund = RefundRequest {
        payment_id: "pay_1".into(),
        amount_minor: 500,
        currency: "KZT".into(),
        reason: "duplicate".into(),
        reference: "op_r".into(),
    };
    let call = client(&base, 5_000).create_refund("op_r", &refund).await;
    assert_succeeded(&call, "re_1");
    let seen = only_request(&log);
    assert_eq!(seen.path, "/v1/refunds");
    assert_eq!(seen.idempotency_key.as_deref(), Some("op_r"));
    assert_eq!(
        seen.body,
        json!({"payment_id": "pay_1", "amount_minor": 500, "currency": "KZT", "reason": "duplicate", "reference": "op_r"})
    );
}

#[derive(serde::Deserialize)]
struct ByReference {
    reference: String,
}

#[tokio::test]
async fn lookups_by_reference_and_by_id() {
    let router = Router::new()
        .route(
            "/v1/payments",
            get(|Query(q): Query<ByReference>, h: HeaderMap| async move {
                assert_eq!(h["authorization"], format!("Bearer {API_KEY}").as_str());
                match q.reference.as_str() {
                    "op_two" => {
                        Json(json!({"data": [{"id": "pay_1"}, {"id": "pay_2"}]})).into_response()
                    }
                    "op_broken" => Json(json!({"items": []})).into_response(),
                    "op_down" => StatusCode::SERVICE_UNAVAILABLE.into_response(),
                    _ => Json(json!({"data": []})).into_response(),
                }
            }),
        )
        .route(
            "/v1/payments/{id}",
            get(|Path(id): Path<String>| async move {
                match id.as_str() {
                    "pay_1" | "pay/odd" => {
                        Json(json!({"id": id, "status": "succeeded"})).into_response()
                    }
                    _ => StatusCode::NOT_FOUND.into_response(),
                }
            }),
        )
        .route(
            "/v1/refunds",
            get(|| async { Json(json!({"data": [{"id": "re_1"}]})) }),
        )
        .route("/v1/refunds/{id}", get(|| async { StatusCode::NOT_FOUND }));
    let base = serve(router).await;
    let client = client(&base, 5_000);

    let two = client.find_payments_by_reference("op_two").await.unwrap();
    assert_eq!(
        two.iter()
            .map(|p| p["id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["pay_1", "pay_2"]
    );
    assert!(client
        .find_payments_by_reference("op_none")
        .await
        .unwrap()
        .is_empty());
    assert!(matches!(
        client.find_payments_by_reference("op_broken").await,
        Err(LookupError::Body(_))
    ));
    assert!(matches!(
        client.find_payments_by_reference("op_down").await,
        Err(LookupError::Status(503))
    ));

    assert_eq!(
        client.get_payment("pay_1").await.unwrap().unwrap()["status"],
        "succeeded"
    );
    // An id is one path segment, whatever it contains.
    assert_eq!(
        client.get_payment("pay/odd").await.unwrap().unwrap()["id"],
        "pay/odd"
    );
    assert_eq!(client.get_payment("pay_missing").await.unwrap(), None);

    assert_eq!(
        client
            .find_refunds_by_reference("op_r")
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(client.get_refund("re_missing").await.unwrap(), None);
}

#[tokio::test]
async fn lookup_transport_failure_is_an_error_not_an_empty_answer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = client(&format!("http://{addr}"), 5_000);
    assert!(matches!(
        client.find_payments_by_reference("op_x").await,
        Err(LookupError::Transport(_))
    ));
    assert!(matches!(
        client.get_payment("pay_1").await,
        Err(LookupError::Transport(_))
    ));
}

#[test]
fn the_api_key_never_prints() {
    let config = Endpoint {
        base_url: "http://127.0.0.1:1".into(),
        api_key: Secret::new(API_KEY.to_owned()),
        timeout_ms: 1_000,
    };
    let secret = Secret::new(API_KEY.to_owned());
    for shown in [
        format!("{config:?}"),
        format!("{:?}", PaymentsClient::new(config.clone()).unwrap()),
        format!("{secret}"),
        format!("{secret:?}"),
    ] {
        assert!(!shown.contains(API_KEY), "key leaked: {shown}");
    }
}

#[test]
fn bad_configuration_is_refused() {
    let config = |base_url: &str, api_key: &str, timeout_ms| Endpoint {
        base_url: base_url.into(),
        api_key: Secret::new(api_key.into()),
        timeout_ms,
    };
    assert!(PaymentsClient::new(config("not a url", "k", 1_000)).is_err());
    assert!(PaymentsClient::new(config("mailto:ops@example.com", "k", 1_000)).is_err());
    assert!(PaymentsClient::new(config("http://127.0.0.1:1", "bad\nkey", 1_000)).is_err());
    assert!(PaymentsClient::new(config("http://127.0.0.1:1", "k", 0)).is_err());
}

#[test]
fn payments_capabilities_match_the_protocol() {
    let day = std::time::Duration::from_secs(86_400);
    let caps = fleet_core::catalogue::provider_spec::PAYMENTS
        .name
        .spec()
        .capabilities;
    assert!(caps.idempotent_create == Some(day) && caps.lookup && !caps.conditional_update);
}
