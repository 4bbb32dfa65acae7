//! Every series whose labels are known in advance is on `/metrics` from the start, at
//! zero, in each binary that owns it: a dashboard or an alert must not wait for the first
//! dead letter, version conflict or webhook to see the series (and `increase()` must not
//! miss that first one). Each binary runs as a real process against an idle fleet.

use std::collections::BTreeMap;

use fleet_tests::{eventually, TestFleet, WorkerProcess, WEBHOOK_SECRET};
use serde_json::Value;

/// One sample of the Prometheus text format: name, labels, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the samples of a scrape (label values here never hold `,`, `"` or `}`).
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|kv| !kv.is_empty())
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_owned(), v.trim_matches('"').to_owned()))
                })
                .collect();
            Some(Sample {
                name: name.to_owned(),
                labels,
                value: value.parse().ok()?,
            })
        })
        .collect()
}

/// `name{k="v",…}` with these labels (among others) and its value.
fn find<'a>(all: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
    all.iter().find(|s| {
        s.name == name
            && labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    })
}

/// The `addr` field of the first JSON log line whose message is `message`.
fn logged_addr(log: &str, message: &str) -> Option<String> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["message"] == message)
        .and_then(|v| v["addr"].as_str().map(str::to_owned))
}

/// The process's first scrape once its work has started: the series are created when
/// the worker's run begins, just after the admin server listens.
async fn scrape_at_start(
    fleet: &TestFleet,
    process: &WorkerProcess,
    first_owned: &str,
) -> Vec<Sample> {
    let admin = eventually(&format!("{} to serve /metrics", process.name), || async {
        logged_addr(&process.log_text(), "admin server listening")
    })
    .await;
    let text = eventually(&format!("{} to export {first_owned}", process.name), || {
        let http = fleet.http.clone();
        let url = format!("http://{admin}/metrics");
        async move {
            let text = http.get(url).send().await.ok()?.text().await.ok()?;
            text.contains(first_owned).then_some(text)
        }
    })
    .await;
    samples(&text)
}

/// Asserts each expected series is present with the value 0.
fn assert_at_zero(binary: &str, all: &[Sample], expected: &[(&str, &[(&str, &str)])]) {
    let mut missing = Vec::new();
    for (name, labels) in expected {
        match find(all, name, labels) {
            Some(s) if s.value == 0.0 => {}
            Some(s) => missing.push(format!("{name}{labels:?} = {} (not 0)", s.value)),
            None => missing.push(format!("{name}{labels:?} absent")),
        }
    }
    assert!(missing.is_empty(), "{binary} at start: {missing:#?}");
    assert!(
        find(all, "fleet_build_info", &[]).is_some(),
        "{binary} exports fleet_build_info"
    );
}

#[tokio::test]
async fn every_worker_exports_its_known_series_at_zero_from_the_start() {
    let fleet = TestFleet::start().await;

    let prepare = fleet.spawn_process("fleet-prepare", &[]);
    let execute = fleet.spawn_process("fleet-execute", &[]);
    let reconcile = fleet.spawn_process("fleet-reconcile", &[]);
    let webhooks = fleet.spawn_process(
        "fleet-webhook-ingest",
        &[
            ("WEBHOOK_SECRETS", WEBHOOK_SECRET),
            ("WEBHOOK_ADDR", "127.0.0.1:0"),
        ],
    );
    let relay = fleet.spawn_process("fleet-relay", &[]);
    let api = fleet.spawn_process("fleet-api", &[("API_ADDR", "127.0.0.1:0")]);

    let all = scrape_at_start(&fleet, &prepare, "fleet_intents_prepared_total").await;
    assert_at_zero(
        "fleet-prepare",
        &all,
        &[
            ("fleet_intents_prepared_total", &[("outcome", "prepared")]),
            (
                "fleet_intents_prepared_total",
                &[("outcome", "nul_character")],
            ),
            (
                "fleet_intents_prepared_total",
                &[("outcome", "approval_outlives_key")],
            ),
            (
                "fleet_approvals_renewed_total",
                &[("action", "payment.create")],
            ),
            (
                "fleet_approvals_renewed_total",
                &[("action", "crm.deal.update")],
            ),
            (
                "fleet_messages_dead_lettered_total",
                &[("queue", "intents.prepare"), ("reason", "malformed")],
            ),
            (
                "fleet_messages_dead_lettered_total",
                &[
                    ("queue", "intents.prepare"),
                    ("reason", "operation_id_conflict"),
                ],
            ),
            (
                "fleet_messages_dead_lettered_total",
                &[
                    ("queue", "intents.prepare"),
                    ("reason", "retries_exhausted"),
                ],
            ),
            (
                "fleet_messages_consumed_total",
                &[("queue", "intents.prepare"), ("outcome", "dead_letter")],
            ),
            (
                "fleet_ack_failures_total",
                &[("queue", "intents.prepare"), ("op", "ack")],
            ),
        ],
    );

    let all = scrape_at_start(&fleet, &execute, "fleet_version_conflicts_total").await;
    assert_at_zero(
        "fleet-execute",
        &all,
        &[
            ("fleet_version_conflicts_total", &[("provider", "crm")]),
            ("fleet_version_conflicts_total", &[("provider", "orders")]),
            (
                "fleet_provider_calls_total",
                &[
                    ("provider", "orders"),
                    ("action", "order.status.change"),
                    ("outcome", "status_conflict"),
                ],
            ),
            (
                "fleet_provider_calls_total",
                &[
                    ("provider", "esign"),
                    ("action", "contract.send"),
                    ("outcome", "accepted"),
                ],
            ),
            ("fleet_fenced_out_total", &[("action", "payment.create")]),
            ("fleet_fenced_out_total", &[("action", "crm.deal.update")]),
            ("fleet_lease_expired_total", &[("action", "refund.create")]),
            (
                "fleet_provider_calls_total",
                &[
                    ("provider", "payments"),
                    ("action", "payment.create"),
                    ("outcome", "unknown"),
                ],
            ),
            (
                "fleet_provider_calls_total",
                &[
                    ("provider", "crm"),
                    ("action", "crm.deal.update"),
                    ("outcome", "version_conflict"),
                ],
            ),
            (
                "fleet_provider_call_duration_seconds_count",
                &[
                    ("provider", "payments"),
                    ("action", "payment.create"),
                    ("outcome", "succeeded"),
                ],
            ),
            ("fleet_end_to_end_seconds_count", &[("to", "succeeded")]),
            (
                "fleet_messages_dead_lettered_total",
                &[("queue", "operations.execute"), ("reason", "malformed")],
            ),
            (
                "fleet_messages_dead_lettered_total",
                &[
                    ("queue", "operations.execute"),
                    ("reason", "retries_exhausted"),
                ],
            ),
            (
                "fleet_messages_published_total",
                &[("queue", "operations.reconcile"), ("outcome", "failed")],
            ),
            ("fleet_broker_reconnects_total", &[("role", "publisher")]),
        ],
    );

    let all = scrape_at_start(&fleet, &reconcile, "fleet_time_to_reconciliation_seconds").await;
    assert_at_zero(
        "fleet-reconcile",
        &all,
        &[
            ("fleet_lease_expired_total", &[("action", "any")]),
            ("fleet_lease_expired_total", &[("action", "payment.create")]),
            ("fleet_reconcile_sweeps_total", &[("outcome", "error")]),
            (
                "fleet_time_to_reconciliation_seconds_count",
                &[("to", "succeeded")],
            ),
            (
                "fleet_duplicate_effects_detected_total",
                &[("provider", "payments"), ("action", "payment.create")],
            ),
            (
                "fleet_duplicate_effects_detected_total",
                &[("provider", "esign"), ("action", "contract.send")],
            ),
            (
                "fleet_messages_dead_lettered_total",
                &[
                    ("queue", "operations.reconcile"),
                    ("reason", "invalid_field"),
                ],
            ),
            (
                "fleet_messages_published_total",
                &[("queue", "operations.execute"), ("outcome", "confirmed")],
            ),
        ],
    );

    let all = scrape_at_start(&fleet, &webhooks, "fleet_webhook_events_total").await;
    assert_at_zero(
        "fleet-webhook-ingest",
        &all,
        &[
            (
                "fleet_webhook_events_total",
                &[("provider", "payments"), ("outcome", "new")],
            ),
            (
                "fleet_webhook_events_total",
                &[("provider", "esign"), ("outcome", "new")],
            ),
            (
                "fleet_webhook_events_total",
                &[("provider", "payments"), ("outcome", "duplicate")],
            ),
            (
                "fleet_webhook_events_total",
                &[("provider", "payments"), ("outcome", "rejected_signature")],
            ),
            (
                "fleet_webhook_events_total",
                &[("provider", "payments"), ("outcome", "broker_unavailable")],
            ),
            (
                "fleet_webhook_receive_to_apply_seconds_count",
                &[("provider", "payments")],
            ),
            (
                "fleet_messages_dead_lettered_total",
                &[
                    ("queue", "webhooks.ingest"),
                    ("reason", "signature_invalid"),
                ],
            ),
            (
                "fleet_messages_published_total",
                &[("queue", "webhooks.ingest"), ("outcome", "confirmed")],
            ),
        ],
    );

    let all = scrape_at_start(&fleet, &relay, "fleet_events_published_total").await;
    assert_at_zero(
        "fleet-relay",
        &all,
        &[
            ("fleet_events_published_total", &[("type", "succeeded")]),
            ("fleet_events_published_total", &[("type", "prepared")]),
            ("fleet_events_publish_failures_total", &[]),
        ],
    );

    let all = scrape_at_start(&fleet, &api, "fleet_api_waiting_requests").await;
    assert_at_zero(
        "fleet-api",
        &all,
        &[
            ("fleet_api_waiting_requests", &[]),
            ("fleet_intents_prepared_total", &[("outcome", "prepared")]),
            (
                "fleet_approvals_renewed_total",
                &[("action", "refund.create")],
            ),
        ],
    );

    drop((prepare, execute, reconcile, webhooks, relay, api));
    fleet.stop().await;
}
