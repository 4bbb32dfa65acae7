//! A tenant with a connected account of its own (`PAYMENTS_STRIPE_ACCOUNTS`): every
//! request made for it, the create and every read (the lookup by id and by list, the
//! refund's payment read at intake, the payer and the payee read before approval and
//! before the call), carries `Stripe-Account: acct_…`; another tenant's carry none. A
//! refund's payment read in the tenant's account is the tenant's.

use std::sync::{Arc, Mutex};

mod common;

use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::{Json, Router};
use fleet_core::catalogue::Dialect;
use fleet_core::stripe::accounts::ConnectedAccounts;
use fleet_core::Action;
use fleet_providers::{Operation, ProviderConfigs, Providers};
use serde_json::{json, Value};
use tokio::net::TcpListener;

const KEY: &str = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";

/// Every request: its method and path, and the `Stripe-Account` it carried.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Answers each path with an object of its kind; records what was asked.
async fn stripe(
    State(seen): State<Seen>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Json<Value> {
    let account = headers
        .get("stripe-account")
        .map(|v| v.to_str().unwrap().to_owned());
    let path = uri.path().to_owned();
    seen.lock()
        .unwrap()
        .push((format!("{method} {path}"), account));
    let refund = json!({"id": "re_1", "object": "refund", "status": "succeeded", "amount": 700,
                        "metadata": {"fleet_operation": KEY}});
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    Json(match segments.as_slice() {
        ["v1", "refunds"] if method == Method::GET => json!({"data": [refund], "has_more": false}),
        ["v1", "refunds", ..] => refund,
        // Charged for another tenant by its metadata, but read in the asking tenant's
        // account: the asking tenant's.
        ["v1", "payment_intents", id] => json!({
            "id": id, "object": "payment_intent", "status": "succeeded", "amount": 5000,
            "amount_received": 5000, "currency": "eur", "customer": "cus_1",
            "metadata": {"fleet_tenant": "initech"}}),
        ["v1", "customers", id] => json!({"id": id, "object": "customer", "name": "A. Buyer"}),
        ["v1", "payment_methods", id] => json!({"id": id, "object": "payment_method",
            "type": "card", "customer": "cus_1",
            "card": {"brand": "visa", "last4": "4242", "country": "DE", "fingerprint": "fp_1"}}),
        ["v1", "accounts", id] => json!({"id": id, "object": "account", "country": "DE",
            "payouts_enabled": true}),
        _ => json!({}),
    })
}

async fn serve(seen: Seen) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().fallback(stripe).with_state(seen);
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

fn stripe_at(base_url: &str) -> Providers {
    let mut configs = ProviderConfigs::all_at(base_url, "sk_test_x", 2_000, 0, 0);
    let payments = configs.provider_mut("payments");
    payments.dialect = Dialect::Stripe { search: true };
    payments.accounts = ConnectedAccounts::parse("acme=acct_1Acme").unwrap();
    configs.connect().unwrap()
}

fn op<'a>(action: Action, tenant: &'a str, payload: &'a Value) -> Operation<'a> {
    common::operation(action, tenant, KEY, payload)
}

/// Every request one tenant's refund, charge and payment make, as the fleet makes them.
async fn every_request_of(providers: &Providers, tenant: &str) {
    let refund = json!({"payment_id": "pi_123", "amount_minor": 700, "currency": "EUR",
                        "reason": "late"});
    let charge = json!({"invoice_id": "inv_7", "customer": "cus_1", "payment_method": "pm_1",
                        "amount_minor": 700, "currency": "EUR"});
    let payment = json!({"invoice_id": "inv_7", "beneficiary_id": "acct_9Vendor",
                         "amount_minor": 700, "currency": "EUR"});
    let refund_op = op(Action::RefundCreate, tenant, &refund);
    let provider = providers.serving(&refund_op).unwrap();
    let request = provider.request(&refund_op).unwrap();
    provider.send(&refund_op, &request).await;
    provider.look_up_once(&refund_op, Some("re_1")).await;
    provider.look_up_once(&refund_op, None).await;
    let read = provider
        .look_up_refunded(tenant, Action::RefundCreate, &refund)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // Read in acme's account, the payment is acme's; on the platform's account its
    // metadata names another tenant.
    let judged = read.judge(tenant, 700, "EUR");
    assert_eq!(judged.is_ok(), tenant == "acme", "{tenant}: {judged:?}");
    // Read whatever the evidence says: what matters here is where they were read.
    for (action, payload) in [
        (Action::ChargeCreate, &charge),
        (Action::PaymentCreate, &payment),
    ] {
        let answer = provider.look_up_payer(tenant, action, payload).await;
        assert!(answer.unwrap().is_ok(), "{action:?} answered");
    }
    let charge_op = op(Action::ChargeCreate, tenant, &charge);
    provider.look_up_once(&charge_op, Some("pi_123")).await;
}

#[tokio::test]
async fn every_request_for_a_tenant_with_an_account_acts_in_it_and_no_other_does() {
    let seen: Seen = Arc::default();
    let providers = stripe_at(&serve(seen.clone()).await);
    every_request_of(&providers, "acme").await;
    let acme: Vec<_> = std::mem::take(&mut *seen.lock().unwrap());
    // The refund's create, its two lookups (by id, by list), its payment and that
    // payment's refunds, the customer and the payment method, the payee's account, and a
    // charge's lookup.
    assert_eq!(acme.len(), 9, "{acme:?}");
    for (asked, account) in &acme {
        assert_eq!(account.as_deref(), Some("acct_1Acme"), "{asked}");
    }
    every_request_of(&providers, "globex").await;
    let globex = seen.lock().unwrap();
    assert_eq!(globex.len(), acme.len(), "{globex:?}");
    for (asked, account) in globex.iter() {
        assert_eq!(account, &None, "{asked}");
    }
}
