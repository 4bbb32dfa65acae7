//! The Stripe simulator's connected accounts, over HTTP: a request with `Stripe-Account`
//! acts inside that account, one without it on the platform's. What one account holds is
//! not there for another: not read, listed, searched or refunded; a key is kept per
//! account. And what refunds need: a confirmed PaymentIntent is paid by a charge carrying
//! the payment method's card, read expanded with its customer, and refunded only up to
//! what is left of it.

use std::time::Duration;

use fleet_provider_sim::stripe::{StripeSim, StripeSimConfig, STRIPE_SIM_KEY};
use reqwest::StatusCode;
use serde_json::{json, Value};

const ACME: &str = "acct_1Acme";
const GLOBEX: &str = "acct_2Globex";

struct Client {
    sim: StripeSim,
    http: reqwest::Client,
}

impl Client {
    async fn start() -> Client {
        let sim = StripeSim::start(StripeSimConfig::default())
            .await
            .expect("the Stripe simulator");
        sim.put_customer(
            Some(ACME),
            json!({"id": "cus_1", "object": "customer", "name": "Jane Doe",
                   "email": "jane@example.com"}),
        );
        sim.put_payment_method(
            Some(ACME),
            json!({"id": "pm_1", "object": "payment_method", "type": "card",
                   "customer": "cus_1", "card": {"brand": "visa", "last4": "4242",
                   "country": "FR", "fingerprint": "fpVisa4242"}}),
        );
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        Client { sim, http }
    }

    async fn post(
        &self,
        account: Option<&str>,
        path: &str,
        key: &str,
        form: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.sim.base_url))
            .bearer_auth(STRIPE_SIM_KEY)
            .header("Idempotency-Key", key)
            .form(form);
        if let Some(account) = account {
            request = request.header("Stripe-Account", account);
        }
        let answer = request.send().await.expect("an answer");
        (answer.status(), answer.json().await.unwrap())
    }

    async fn get(&self, account: Option<&str>, path_and_query: &str) -> (StatusCode, Value) {
        let mut request = self
            .http
            .get(format!("{}{path_and_query}", self.sim.base_url))
            .bearer_auth(STRIPE_SIM_KEY);
        if let Some(account) = account {
            request = request.header("Stripe-Account", account);
        }
        let answer = request.send().await.expect("an answer");
        (answer.status(), answer.json().await.unwrap())
    }

    /// A charge of 5000 KZT confirmed in `account` under `key`.
    async fn charge(&self, account: Option<&str>, key: &str) -> (StatusCode, Value) {
        let form = [
            ("amount", "5000"),
            ("currency", "kzt"),
            ("customer", "cus_1"),
            ("payment_method", "pm_1"),
            ("confirm", "true"),
            ("metadata[fleet_operation]", key),
        ];
        self.post(account, "/v1/payment_intents", key, &form).await
    }
}

#[tokio::test]
async fn what_one_account_holds_is_not_there_for_another() {
    let c = Client::start().await;
    let (status, intent) = c.charge(Some(ACME), "op_1").await;
    assert_eq!(status, StatusCode::OK, "{intent}");
    let id = intent["id"].as_str().unwrap();
    assert_eq!(c.sim.payment_intents_in(Some(ACME)), vec![intent.clone()]);
    assert!(c.sim.payment_intents_in(None).is_empty());
    let path = format!("/v1/payment_intents/{id}");
    assert_eq!(c.get(Some(ACME), &path).await.0, StatusCode::OK);
    for other in [None, Some(GLOBEX)] {
        let (status, missing) = c.get(other, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{other:?}");
        assert_eq!(missing["error"]["code"], "resource_missing");
        let (_, listed) = c.get(other, "/v1/payment_intents?customer=cus_1").await;
        assert_eq!(listed["data"], json!([]), "{other:?}");
        let search =
            "/v1/payment_intents/search?query=metadata%5B%27fleet_operation%27%5D%3A%27op_1%27";
        let (_, found) = c.get(other, search).await;
        assert_eq!(found["data"], json!([]), "{other:?}");
        assert_eq!(
            c.get(other, "/v1/customers/cus_1").await.0,
            StatusCode::NOT_FOUND
        );
        let form = [("payment_intent", id), ("amount", "100")];
        let (status, refused) = c.post(other, "/v1/refunds", "op_r", &form).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{other:?}: {refused}");
        assert_eq!(refused["error"]["code"], "resource_missing");
    }
    let (_, listed) = c
        .get(Some(ACME), "/v1/payment_intents?customer=cus_1")
        .await;
    assert_eq!(listed["data"], json!([intent]));
    // Another account's customer is not there to be charged.
    let (status, refused) = c.charge(Some(GLOBEX), "op_2").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["error"]["param"], "customer");
    // A key is the account's: the same key in another account is another request.
    let (status, platform) = c
        .post(
            None,
            "/v1/payment_intents",
            "op_1",
            &[("amount", "10"), ("currency", "kzt")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{platform}");
    assert_ne!(platform["id"], intent["id"]);
    let seen = c.sim.requests();
    assert_eq!(seen[0].account.as_deref(), Some(ACME));
    assert_eq!(seen.last().unwrap().account, None);
}

#[tokio::test]
async fn a_paid_intent_reads_expanded_and_refunds_up_to_what_is_left() {
    let c = Client::start().await;
    let (_, intent) = c.charge(Some(ACME), "op_1").await;
    let id = intent["id"].as_str().unwrap();
    let path = format!("/v1/payment_intents/{id}?expand[]=latest_charge&expand[]=customer");
    let (status, read) = c.get(Some(ACME), &path).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["customer"]["name"], "Jane Doe");
    assert_eq!(read["customer"]["email"], "jane@example.com");
    assert_eq!(
        read["latest_charge"]["payment_method_details"]["card"]["last4"],
        "4242"
    );
    let refund = |amount: &'static str, key: &'static str| {
        let form = [
            ("payment_intent", id),
            ("amount", amount),
            ("metadata[fleet_operation]", key),
        ];
        let c = &c;
        async move { c.post(Some(ACME), "/v1/refunds", key, &form).await }
    };
    let (status, first) = refund("4000", "op_r1").await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["status"], "succeeded");
    assert_eq!(first["payment_intent"], id);
    let (status, over) = refund("1500", "op_r2").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(over["error"]["code"], "amount_too_large");
    // The refusal executed: it is saved under its key.
    assert_eq!(refund("1500", "op_r2").await.1, over);
    let (_, listed) = c
        .get(
            Some(ACME),
            &format!("/v1/refunds?payment_intent={id}&limit=100"),
        )
        .await;
    assert_eq!(listed["data"], json!([first]));
    let (_, none) = c
        .get(None, &format!("/v1/refunds?payment_intent={id}"))
        .await;
    assert_eq!(none["data"], json!([]));
    let charge = read["latest_charge"]["id"].as_str().unwrap();
    let (_, charge) = c.get(Some(ACME), &format!("/v1/charges/{charge}")).await;
    assert_eq!(charge["amount_refunded"], 4000);
    assert_eq!(c.sim.refunds_in(Some(ACME)), vec![first]);
    assert!(c.sim.refunds_in(None).is_empty());
}
