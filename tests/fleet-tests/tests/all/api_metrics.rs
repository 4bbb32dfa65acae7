//! fleet-api's request-duration histogram, read from the `/metrics` of a real API process
//! after a few requests: one series per route template (never the path, which carries the
//! operation id), method and status class, with the long-poll under a route label of its
//! own so that its seconds stay out of the quick reads' quantiles.

use std::collections::BTreeMap;

use fleet_core::Role;
use fleet_tests::{eventually, intent, op_of, TestFleet};
use reqwest::{Method, StatusCode};

const TENANT: &str = "org_482";
const HISTOGRAM: &str = "fleet_api_request_duration_seconds";

/// The samples of a scrape whose name is `name`: labels and value (label values here never
/// hold `,`, `"` or `}`).
fn samples_of(text: &str, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let labels = series.strip_prefix(name)?.strip_prefix('{')?;
            let labels = labels
                .strip_suffix('}')?
                .split(',')
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_owned(), v.trim_matches('"').to_owned()))
                })
                .collect();
            Some((labels, value.parse().ok()?))
        })
        .collect()
}

/// The value of the series `name` with exactly these labels, if it is exported.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples_of(text, name)
        .into_iter()
        .find_map(|(have, v)| (have == want).then_some(v))
}

#[tokio::test]
async fn the_request_histogram_is_labelled_by_route_template_method_and_status_class() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let token = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let i = intent();
    let op = op_of(&i);
    let http = &fleet.http;

    api.submitted(http, &token, &i).await;
    let read = |path: String| {
        let request = http.get(api.url(&path)).bearer_auth(&token);
        async move { request.send().await.unwrap().status() }
    };
    assert_eq!(read(format!("/v1/operations/{op}")).await, StatusCode::OK);
    // Nobody approves it: the wait runs out after its second, and answers 200.
    assert_eq!(
        read(format!("/v1/operations/{op}?wait_for=final&timeout_s=1")).await,
        StatusCode::OK
    );
    assert!(
        read("/v1/operations/op_01NOTHERE0000000000000000".to_owned())
            .await
            .is_client_error()
    );
    let anonymous = http.get(api.url("/v1/operations")).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    // Any token is a method to HTTP; each must not become a series of its own.
    let invented = Method::from_bytes(b"BREW").unwrap();
    let brewed = http
        .request(invented, api.url("/v1/intents"))
        .send()
        .await
        .unwrap();
    assert!(brewed.status().is_client_error(), "{}", brewed.status());

    let count = format!("{HISTOGRAM}_count");
    let sum = format!("{HISTOGRAM}_sum");
    let bucket = format!("{HISTOGRAM}_bucket");
    // The observation is recorded once the answer is built, just before it is sent.
    let text = eventually("the six requests on /metrics", || async {
        let text = fleet_tests::scrape(http, &api.admin_url).await?;
        let total: f64 = samples_of(&text, &count).iter().map(|(_, v)| v).sum();
        (total >= 6.0).then_some(text)
    })
    .await;

    let series = |route: &str, method: &str, class: &str| {
        let labels = [
            ("method", method),
            ("route", route),
            ("status_class", class),
        ];
        value(&text, &count, &labels)
    };
    assert_eq!(series("/v1/intents", "POST", "2xx"), Some(1.0));
    assert_eq!(series("/v1/operations/{id}", "GET", "2xx"), Some(1.0));
    assert_eq!(
        series("/v1/operations/{id}?wait_for", "GET", "2xx"),
        Some(1.0)
    );
    assert_eq!(series("/v1/operations/{id}", "GET", "4xx"), Some(1.0));
    assert_eq!(series("/v1/operations", "GET", "4xx"), Some(1.0));

    let methods: Vec<String> = samples_of(&text, &count)
        .into_iter()
        .filter_map(|(labels, _)| labels.get("method").cloned())
        .collect();
    assert!(
        methods.iter().any(|m| m == "other") && !methods.iter().any(|m| m == "BREW"),
        "methods: {methods:?}"
    );

    let waited = value(
        &text,
        &sum,
        &[
            ("method", "GET"),
            ("route", "/v1/operations/{id}?wait_for"),
            ("status_class", "2xx"),
        ],
    )
    .expect("the long-poll's sum");
    assert!(waited >= 1.0, "the long-poll waited its second: {waited}");
    let quick = value(
        &text,
        &sum,
        &[
            ("method", "GET"),
            ("route", "/v1/operations/{id}"),
            ("status_class", "2xx"),
        ],
    )
    .expect("the plain read's sum");
    assert!(quick < 1.0, "the plain read did not wait: {quick}");

    // The explicit buckets, up to the one past the longest wait (not a summary).
    let top = samples_of(&text, &bucket)
        .into_iter()
        .filter(|(labels, _)| labels.get("route").map(String::as_str) == Some("/v1/intents"))
        .filter_map(|(labels, _)| labels.get("le").cloned())
        .collect::<Vec<_>>();
    assert!(
        top.iter().any(|le| le == "90") && top.iter().any(|le| le == "+Inf"),
        "buckets: {top:?}"
    );
    assert!(
        text.contains(&format!("# HELP {HISTOGRAM} ")),
        "the histogram is described"
    );
    assert!(
        !text.contains(&op) && !text.contains("op_01NOTHERE"),
        "no operation id in any label"
    );

    drop(api);
    fleet.stop().await;
}
