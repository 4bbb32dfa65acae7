//! The Stripe simulator over HTTP, as Stripe's clients speak to it: form-encoded bodies,
//! a Bearer key, `Idempotency-Key`. What it promises beyond a third-party double: saved
//! answers replayed by key (and refused for other parameters), keys forgotten after the
//! retention, a search that lags, a rate limit answered 429 with `Stripe-Should-Retry`.

use std::time::{Duration, Instant};

use fleet_provider_sim::stripe::{StripeFault, StripeSim, StripeSimConfig, STRIPE_SIM_KEY};
use reqwest::StatusCode;
use serde_json::Value;

const ACCOUNT: &str = "acct_1Vendor77";

fn transfer_form(amount: &str, key: &str) -> Vec<(&'static str, String)> {
    vec![
        ("amount", amount.to_owned()),
        ("currency", "kzt".to_owned()),
        ("destination", ACCOUNT.to_owned()),
        ("transfer_group", "inv_9182".to_owned()),
        ("metadata[fleet_operation]", key.to_owned()),
    ]
}

struct Client {
    sim: StripeSim,
    http: reqwest::Client,
}

impl Client {
    async fn start(config: StripeSimConfig) -> Client {
        Client {
            sim: StripeSim::start(config)
                .await
                .expect("the Stripe simulator"),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        }
    }

    async fn post(
        &self,
        path: &str,
        key: &str,
        form: &[(&str, String)],
    ) -> reqwest::Result<reqwest::Response> {
        self.http
            .post(format!("{}{path}", self.sim.base_url))
            .bearer_auth(STRIPE_SIM_KEY)
            .header("Idempotency-Key", key)
            .form(form)
            .send()
            .await
    }

    async fn transfer(&self, amount: &str, key: &str) -> (StatusCode, bool, Value) {
        let answer = self
            .post("/v1/transfers", key, &transfer_form(amount, key))
            .await
            .expect("an answer");
        let replayed = answer
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        (answer.status(), replayed, answer.json().await.unwrap())
    }

    async fn get(&self, path_and_query: &str) -> (StatusCode, Value) {
        let answer = self
            .http
            .get(format!("{}{path_and_query}", self.sim.base_url))
            .bearer_auth(STRIPE_SIM_KEY)
            .send()
            .await
            .expect("an answer");
        (answer.status(), answer.json().await.unwrap())
    }
}

#[tokio::test]
async fn a_transfer_is_made_from_a_form_read_by_id_and_listed_by_its_group() {
    let c = Client::start(StripeSimConfig::default()).await;
    let (status, replayed, transfer) = c.transfer("1250", "op_1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!replayed);
    let id = transfer["id"].as_str().unwrap();
    assert!(id.starts_with("tr_"), "{transfer}");
    assert_eq!(transfer["object"], "transfer");
    assert_eq!(transfer["amount"], 1250);
    assert_eq!(transfer["destination"], ACCOUNT);
    assert_eq!(transfer["metadata"]["fleet_operation"], "op_1");
    let (status, read) = c.get(&format!("/v1/transfers/{id}")).await;
    assert_eq!((status, &read), (StatusCode::OK, &transfer));
    let (_, listed) = c
        .get("/v1/transfers?transfer_group=inv_9182&limit=100")
        .await;
    assert_eq!(listed["data"], serde_json::json!([transfer]));
    assert_eq!(listed["has_more"], false);
    let (_, other) = c.get("/v1/transfers?transfer_group=inv_1").await;
    assert_eq!(other["data"], serde_json::json!([]));
    let (status, missing) = c.get("/v1/transfers/tr_none").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(missing["error"]["code"], "resource_missing");
}

#[tokio::test]
async fn a_wrong_key_is_401_and_a_bad_destination_is_refused_with_its_code() {
    let c = Client::start(StripeSimConfig::default()).await;
    let answer = c
        .http
        .post(format!("{}/v1/transfers", c.sim.base_url))
        .bearer_auth("sk_test_other")
        .form(&transfer_form("100", "op_1"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let mut form = transfer_form("100", "op_2");
    form[2].1 = "vendor_77".into();
    let answer = c.post("/v1/transfers", "op_2", &form).await.unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], "resource_missing");
    assert_eq!(body["error"]["param"], "destination");
    assert!(c.sim.transfers().is_empty());
    // A refusal before executing saves nothing: the key can still be used.
    let (status, _, _) = c.transfer("100", "op_2").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_key_replays_its_answer_for_the_same_parameters_and_refuses_others() {
    let c = Client::start(StripeSimConfig::default()).await;
    let (_, _, first) = c.transfer("500", "op_1").await;
    let (status, replayed, again) = c.transfer("500", "op_1").await;
    assert_eq!((status, replayed), (StatusCode::OK, true));
    assert_eq!(again, first);
    let (status, replayed, other) = c.transfer("501", "op_1").await;
    assert_eq!((status, replayed), (StatusCode::BAD_REQUEST, false));
    assert_eq!(other["error"]["type"], "idempotency_error");
    assert_eq!(c.sim.transfers().len(), 1, "one transfer");
    let seen = c.sim.requests();
    assert_eq!(seen.len(), 3);
    assert!(seen[1].replayed && !seen[0].replayed && !seen[2].replayed);
    assert_eq!(seen[0].param("amount"), Some("500"));
}

#[tokio::test]
async fn a_key_is_forgotten_after_the_retention() {
    let c = Client::start(StripeSimConfig {
        key_retention: Duration::from_millis(300),
        ..StripeSimConfig::default()
    })
    .await;
    c.transfer("500", "op_1").await;
    let (_, replayed, _) = c.transfer("500", "op_1").await;
    assert!(replayed, "within the retention");
    let since = Instant::now();
    tokio::time::sleep(Duration::from_millis(350)).await;
    let (status, replayed, _) = c.transfer("500", "op_1").await;
    assert!(since.elapsed() >= Duration::from_millis(300));
    assert_eq!((status, replayed), (StatusCode::OK, false));
    assert_eq!(
        c.sim.transfers().len(),
        2,
        "the forgotten key made a second"
    );
}

#[tokio::test]
async fn a_transfer_above_the_balance_is_refused_and_the_refusal_is_saved() {
    let c = Client::start(StripeSimConfig {
        balance_minor: Some(1_000),
        ..StripeSimConfig::default()
    })
    .await;
    let (status, _, refused) = c.transfer("1001", "op_1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(refused["error"]["code"], "balance_insufficient");
    let (status, replayed, again) = c.transfer("1001", "op_1").await;
    assert_eq!((status, replayed), (StatusCode::BAD_REQUEST, true));
    assert_eq!(again, refused);
    let (status, _, _) = c.transfer("1000", "op_2").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(c.sim.transfers().len(), 1);
}

#[tokio::test]
async fn above_the_rate_it_answers_429_asking_for_a_retry_and_executes_nothing() {
    let c = Client::start(StripeSimConfig {
        rate_limit_per_s: Some(2),
        ..StripeSimConfig::default()
    })
    .await;
    let mut statuses = Vec::new();
    for n in 0..3 {
        let key = format!("op_{n}");
        let answer = c
            .post("/v1/transfers", &key, &transfer_form("10", &key))
            .await
            .unwrap();
        let retry = answer
            .headers()
            .get("stripe-should-retry")
            .map(|v| v.to_str().unwrap().to_owned());
        let status = answer.status();
        let body: Value = answer.json().await.unwrap();
        statuses.push((status, retry, body["error"]["code"].clone()));
    }
    // Three requests in far less than a second: the third is over the rate.
    assert_eq!(statuses[0].0, StatusCode::OK);
    assert_eq!(statuses[1].0, StatusCode::OK);
    assert_eq!(
        statuses[2],
        (
            StatusCode::TOO_MANY_REQUESTS,
            Some("true".into()),
            "rate_limit".into()
        )
    );
    assert_eq!(c.sim.transfers().len(), 2);
}

#[tokio::test]
async fn the_search_finds_a_payment_intent_only_after_its_lag() {
    let lag = Duration::from_millis(600);
    let c = Client::start(StripeSimConfig {
        search_lag: lag,
        ..StripeSimConfig::default()
    })
    .await;
    let form = vec![
        ("amount", "900".to_owned()),
        ("currency", "kzt".to_owned()),
        ("confirm", "true".to_owned()),
        ("metadata[fleet_operation]", "op_'7".to_owned()),
    ];
    let made = Instant::now();
    let intent: Value = c
        .post("/v1/payment_intents", "op_7", &form)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(intent["status"], "succeeded");
    let query =
        "/v1/payment_intents/search?query=metadata%5B%27fleet_operation%27%5D%3A%27op_%5C%277%27";
    let (status, first) = c.get(query).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first["object"], "search_result");
    if made.elapsed() < lag {
        assert_eq!(first["data"], serde_json::json!([]), "not searchable yet");
    }
    // Read by id at once: only the search lags.
    let (status, _) = c
        .get(&format!(
            "/v1/payment_intents/{}",
            intent["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(10);
    let found = loop {
        let (_, page) = c.get(query).await;
        if page["data"].as_array().is_some_and(|d| !d.is_empty()) {
            break page;
        }
        assert!(Instant::now() < deadline, "never searchable");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(made.elapsed() >= lag, "found before its lag");
    assert_eq!(found["data"], serde_json::json!([intent]));
    let (status, refused) = c
        .get("/v1/payment_intents/search?query=status%3A%27succeeded%27")
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(refused["error"]["param"], "query");
}

#[tokio::test]
async fn a_dropped_answer_leaves_the_transfer_made_and_saved_under_its_key() {
    let c = Client::start(StripeSimConfig::default()).await;
    c.sim
        .arm(StripeFault::DropAnswerUnlisted(Duration::from_secs(60)));
    let lost = c
        .post("/v1/transfers", "op_1", &transfer_form("300", "op_1"))
        .await;
    assert!(lost.is_err(), "no answer: {lost:?}");
    assert_eq!(c.sim.transfers().len(), 1);
    // Out of lists for now, readable by id, and the key replays what was made.
    let (_, listed) = c.get("/v1/transfers?transfer_group=inv_9182").await;
    assert_eq!(listed["data"], serde_json::json!([]));
    let (status, replayed, made) = c.transfer("300", "op_1").await;
    assert_eq!((status, replayed), (StatusCode::OK, true));
    assert_eq!(made, c.sim.transfers()[0]);
    assert_eq!(c.sim.requests()[0].status, None);
    c.sim.arm(StripeFault::ServerErrorBeforeExecuting);
    let (status, _, error) = c.transfer("300", "op_2").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(error["error"]["type"], "api_error");
    assert_eq!(c.sim.transfers().len(), 1, "nothing executed");
}
