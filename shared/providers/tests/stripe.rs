//! The Stripe mapping against a tiny in-test HTTP server speaking Stripe's shapes: the
//! refund goes form-encoded under the operation's key, a refund whose id is unknown is
//! found by paging the payment's refunds on metadata, and a list that is throttled or
//! longer than a lookup reads proves nothing.

use std::sync::{Arc, Mutex};

mod common;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use fleet_core::catalogue::Dialect;
use fleet_core::lookup::{Found, Lookup};
use fleet_core::outcome::Outcome;
use fleet_core::Action;
use fleet_providers::stripe::MAX_PAGES;
use fleet_providers::{Operation, ProviderConfigs, Providers};
use serde_json::{json, Value};
use std::collections::HashMap;
use tokio::net::TcpListener;

const KEY: &str = "t1.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";

async fn serve(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

fn stripe_at(base_url: &str) -> Providers {
    let mut configs = ProviderConfigs::all_at(base_url, "sk_test_x", 2_000, 0, 0);
    configs.provider_mut("payments").dialect = Dialect::Stripe { search: true };
    configs.connect().unwrap()
}

fn payload() -> Value {
    json!({"payment_id": "pi_123", "amount_minor": 700, "currency": "EUR", "reason": "late"})
}

fn refund_op(payload: &Value) -> Operation<'_> {
    common::operation(Action::RefundCreate, "acme", KEY, payload)
}

fn refund(id: &str, key: &str) -> Value {
    json!({"id": id, "object": "refund", "status": "succeeded", "amount": 700,
           "metadata": {"fleet_operation": key}})
}

#[tokio::test]
async fn the_refund_is_sent_form_encoded_under_the_key_and_read_as_stripe_answers() {
    type Seen = Arc<Mutex<Vec<(HeaderMap, String)>>>;
    let seen: Seen = Arc::default();
    let router = Router::new()
        .route(
            "/v1/refunds",
            post(
                |State(seen): State<Seen>, headers: HeaderMap, body: String| async move {
                    seen.lock().unwrap().push((headers, body));
                    Json(refund("re_1", KEY))
                },
            ),
        )
        .with_state(seen.clone());
    let providers = stripe_at(&serve(router).await);
    let payload = payload();
    let op = refund_op(&payload);
    let provider = providers.serving(&op).unwrap();
    let request = provider.request(&op).unwrap();
    let sent = provider.send(&op, &request).await;
    assert_eq!(
        provider.classify(&op, &sent),
        Outcome::Succeeded {
            external_id: "re_1".into()
        }
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (headers, body) = &seen[0];
    assert_eq!(headers["idempotency-key"], KEY);
    assert_eq!(headers["authorization"], "Bearer sk_test_x");
    assert_eq!(headers["content-type"], "application/x-www-form-urlencoded");
    let form: HashMap<String, String> = url_pairs(body);
    assert_eq!(form["payment_intent"], "pi_123");
    assert_eq!(form["amount"], "700");
    assert_eq!(form["metadata[fleet_operation]"], KEY);
    assert_eq!(form["metadata[fleet_tenant]"], "acme");
    assert_eq!(form.len(), 4, "{form:?}");
}

/// The pairs of a form-encoded body, decoded as a query string is.
fn url_pairs(body: &str) -> HashMap<String, String> {
    let uri = format!("/?{body}").parse().unwrap();
    Query::<HashMap<String, String>>::try_from_uri(&uri)
        .unwrap()
        .0
}

/// Three pages of the payment's refunds, ours on the last; every list request recorded.
#[tokio::test]
async fn a_refund_without_its_id_is_found_by_paging_the_payments_refunds_on_metadata() {
    type Asked = Arc<Mutex<Vec<HashMap<String, String>>>>;
    let asked: Asked = Arc::default();
    let router = Router::new()
        .route(
            "/v1/refunds",
            get(
                |State(asked): State<Asked>, Query(q): Query<HashMap<String, String>>| async move {
                    asked.lock().unwrap().push(q.clone());
                    let page = match q.get("starting_after").map(String::as_str) {
                        None => json!({"data": [refund("re_a", "other")], "has_more": true}),
                        Some("re_a") => {
                            json!({"data": [refund("re_b", "other")], "has_more": true})
                        }
                        Some("re_b") => json!({"data": [refund("re_c", KEY)], "has_more": false}),
                        Some(_) => json!({"data": [], "has_more": false}),
                    };
                    Json(page)
                },
            ),
        )
        .with_state(asked.clone());
    let providers = stripe_at(&serve(router).await);
    let payload = payload();
    let op = refund_op(&payload);
    let (reading, throttled) = providers
        .serving(&op)
        .unwrap()
        .look_up_once(&op, None)
        .await;
    assert_eq!(throttled, None);
    assert_eq!(
        reading.lookup,
        Lookup::Matches(vec![Found::Succeeded {
            external_id: "re_c".into()
        }])
    );
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 3);
    for q in asked.iter() {
        assert_eq!(q["payment_intent"], "pi_123");
        assert_eq!(q["limit"], "100");
    }
}

#[tokio::test]
async fn a_throttled_or_endless_list_proves_nothing() {
    let throttled = Router::new().route(
        "/v1/refunds",
        get(|| async {
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "2")],
                Json(json!({"error": {"type": "invalid_request_error", "code": "rate_limit"}})),
            )
                .into_response()
        }),
    );
    let providers = stripe_at(&serve(throttled).await);
    let payload = payload();
    let op = refund_op(&payload);
    let (reading, wait) = providers
        .serving(&op)
        .unwrap()
        .look_up_once(&op, None)
        .await;
    assert_eq!(reading.lookup, Lookup::Failed);
    assert_eq!(wait, Some(std::time::Duration::from_secs(2)));

    let pages = Arc::new(Mutex::new(0usize));
    let endless = Router::new()
        .route(
            "/v1/refunds",
            get(|State(pages): State<Arc<Mutex<usize>>>| async move {
                let mut n = pages.lock().unwrap();
                *n += 1;
                Json(json!({"data": [refund(&format!("re_{n}"), "other")], "has_more": true}))
            }),
        )
        .with_state(pages.clone());
    let providers = stripe_at(&serve(endless).await);
    let (reading, _) = providers
        .serving(&op)
        .unwrap()
        .look_up_once(&op, None)
        .await;
    assert_eq!(reading.lookup, Lookup::Failed, "{:?}", reading.evidence);
    assert_eq!(*pages.lock().unwrap(), MAX_PAGES);
}
