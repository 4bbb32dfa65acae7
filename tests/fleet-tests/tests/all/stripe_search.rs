//! How the Stripe mapping finds PaymentIntents again (`StripeClient::payment_intents_carrying`,
//! the function a PaymentIntent's lookup calls), against the Stripe simulator, whose
//! search lags as Stripe's does: with `PAYMENTS_STRIPE_SEARCH=on` the Search API, whose
//! empty answer reconcile takes for an absence only once the search lag has passed since
//! the attempt; with `off` the customer's list, up to date at once.

use std::time::{Duration, Instant};

use fleet_core::lookup::{Found, Lookup};
use fleet_core::reconcile::{judge, AttemptAges, ProviderContract, Verdict};
use fleet_provider_sim::stripe::{StripeSim, StripeSimConfig, STRIPE_SIM_KEY};
use fleet_providers::{Endpoint, StripeClient};
use fleet_runtime::Secret;
use serde_json::Value;

const LAG: Duration = Duration::from_millis(2_000);

async fn sim_and_client(search: bool) -> (StripeSim, StripeClient) {
    let sim = StripeSim::start(StripeSimConfig {
        search_lag: LAG,
        ..StripeSimConfig::default()
    })
    .await
    .expect("the Stripe simulator");
    let client = StripeClient::new(Endpoint {
        base_url: sim.base_url.clone(),
        api_key: Secret::new(STRIPE_SIM_KEY.to_owned()),
        timeout_ms: 5_000,
    })
    .expect("a client")
    .searching(search);
    (sim, client)
}

/// A confirmed PaymentIntent of `cus_1` carrying `key`, made over the API.
async fn payment_intent(sim: &StripeSim, key: &str) -> Value {
    let made = reqwest::Client::new()
        .post(format!("{}/v1/payment_intents", sim.base_url))
        .bearer_auth(STRIPE_SIM_KEY)
        .header("Idempotency-Key", key)
        .form(&[
            ("amount", "2500"),
            ("currency", "eur"),
            ("customer", "cus_1"),
            ("confirm", "true"),
            ("metadata[fleet_operation]", key),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    made.json().await.unwrap()
}

/// What a lookup's objects prove, read the way every Stripe lookup reads them: those
/// carrying the key, a succeeded PaymentIntent found as such.
fn read(key: &str, objects: &[Value]) -> Lookup {
    let ours = objects
        .iter()
        .filter(|o| fleet_core::stripe::operation_of(o) == Some(key));
    fleet_core::actions::search::read_ours("test", ours, |o| {
        let id = o["id"].as_str()?.to_owned();
        (o["status"] == "succeeded").then_some(Found::Succeeded { external_id: id })
    })
    .lookup
}

fn contract() -> ProviderContract {
    ProviderContract {
        search_lag_ms: LAG.as_millis() as u64,
        max_request_ms: 0,
        key_retention_ms: 86_400_000,
        escalate_after_failed_lookups: 5,
    }
}

fn ages(since_attempt: Duration) -> AttemptAges {
    let ms = since_attempt.as_millis() as u64;
    AttemptAges {
        newest_ms: Some(ms),
        newest_start_ms: Some(ms),
        oldest_ms: Some(ms),
        failed_lookups_so_far: 0,
    }
}

#[tokio::test]
async fn the_search_finds_a_payment_intent_after_its_lag_and_its_absence_waits_for_the_lag() {
    let (sim, client) = sim_and_client(true).await;
    let key = format!("op_{}", ulid::Ulid::new());
    let attempt = Instant::now();
    let intent = payment_intent(&sim, &key).await;
    let (via, first) = client
        .payment_intents_carrying(&key, &[("customer", "cus_1")])
        .await;
    let since = attempt.elapsed();
    assert_eq!(via, "search");
    let first = first.expect("the search answered");
    if since < LAG {
        // Missing, as Stripe's search may leave it: not an absence yet.
        assert_eq!(read(&key, &first), Lookup::Matches(vec![]));
        assert!(matches!(
            judge(&read(&key, &first), ages(since), contract()),
            Verdict::WaitForSearchLag { .. }
        ));
    }
    let (by, carrying) = (&client, key.as_str());
    let found = fleet_tests::eventually("the PaymentIntent in the search", || async move {
        let (_, found) = by.payment_intents_carrying(carrying, &[]).await;
        found.ok().filter(|f| !f.is_empty())
    })
    .await;
    assert!(attempt.elapsed() >= LAG, "found before the lag");
    let lookup = read(&key, &found);
    assert_eq!(
        judge(&lookup, ages(attempt.elapsed()), contract()),
        Verdict::Resolve(Found::Succeeded {
            external_id: intent["id"].as_str().unwrap().to_owned()
        })
    );
    let asked = sim.requests();
    assert!(asked
        .iter()
        .all(|r| r.method == "POST" || r.path == "/v1/payment_intents/search"));
    assert_eq!(
        asked[1].param("query"),
        Some(format!("metadata['fleet_operation']:'{key}'").as_str())
    );
    // Once the lag has passed, an empty search is an absence.
    let other = format!("op_{}", ulid::Ulid::new());
    let (_, none) = client.payment_intents_carrying(&other, &[]).await;
    assert_eq!(
        judge(&read(&other, &none.unwrap()), ages(LAG), contract()),
        Verdict::Absent
    );
}

#[tokio::test]
async fn with_search_off_the_customers_list_finds_it_at_once() {
    let (sim, client) = sim_and_client(false).await;
    let key = format!("op_{}", ulid::Ulid::new());
    let intent = payment_intent(&sim, &key).await;
    payment_intent(&sim, &format!("op_{}", ulid::Ulid::new())).await;
    let (via, found) = client
        .payment_intents_carrying(&key, &[("customer", "cus_1")])
        .await;
    assert_eq!(via, "list");
    let found = found.unwrap();
    assert_eq!(found, vec![intent]);
    let asked = sim.requests();
    let list = asked.last().unwrap();
    assert_eq!(
        (list.method.as_str(), list.path.as_str()),
        ("GET", "/v1/payment_intents")
    );
    assert_eq!(list.param("customer"), Some("cus_1"));
    assert!(!asked.iter().any(|r| r.path.ends_with("/search")));
}
