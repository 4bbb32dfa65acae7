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

/// Scrapes the process until every expected series is exported (its run registers them
/// just after the admin server listens, so an early scrape may come before), at most
/// until the deadline, then asserts each one is there with the value 0: nothing has
/// happened yet, so a series that is not 0, or never appears, is the failure.
async fn exports_at_zero(
    fleet: &TestFleet,
    process: &WorkerProcess,
    binary: &str,
    expected: &[(&str, &[(&str, &str)])],
) {
    let admin = eventually(&format!("{} to serve /metrics", process.name), || async {
        logged_addr(&process.log_text(), "admin server listening")
    })
    .await;
    let url = format!("http://{admin}/metrics");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let all = loop {
        let text = match fleet.http.get(&url).send().await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let all = samples(&text);
        let complete = expected
            .iter()
            .all(|(name, labels)| find(&all, name, labels).is_some());
        if complete || tokio::time::Instant::now() >= deadline {
            break all;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_at_zero(binary, &all, expected);
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

    exports_at_zero(
        &fleet,
        &prepare,
        "fleet-prepare",
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
    )
    .await;

    exports_at_zero(
        &fleet,
        &execute,
        "fleet-execute",
        &[
            (
                "fleet_provider_throttled_total",
                &[("provider", "payments")],
            ),
            ("fleet_provider_throttled_total", &[("provider", "esign")]),
            (
                "fleet_provider_credentials_refused_total",
                &[("provider", "payments")],
            ),
            (
                "fleet_provider_slot_wait_seconds_count",
                &[("provider", "payments")],
            ),
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
    )
    .await;

    exports_at_zero(
        &fleet,
        &reconcile,
        "fleet-reconcile",
        &[
            ("fleet_provider_throttled_total", &[("provider", "crm")]),
            (
                "fleet_provider_slot_wait_seconds_count",
                &[("provider", "orders")],
            ),
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
    )
    .await;

    exports_at_zero(
        &fleet,
        &webhooks,
        "fleet-webhook-ingest",
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
    )
    .await;

    exports_at_zero(
        &fleet,
        &relay,
        "fleet-relay",
        &[
            ("fleet_events_published_total", &[("type", "succeeded")]),
            ("fleet_events_published_total", &[("type", "prepared")]),
            ("fleet_events_publish_failures_total", &[]),
            // Read from the broker at the relay's start: no dead letters yet.
            (
                "fleet_dead_letter_queue_depth",
                &[("queue", "intents.prepare")],
            ),
            (
                "fleet_dead_letter_queue_depth",
                &[("queue", "webhooks.ingest")],
            ),
        ],
    )
    .await;

    exports_at_zero(
        &fleet,
        &api,
        "fleet-api",
        &[
            ("fleet_api_waiting_requests", &[]),
            ("fleet_intents_prepared_total", &[("outcome", "prepared")]),
            (
                "fleet_approvals_renewed_total",
                &[("action", "refund.create")],
            ),
        ],
    )
    .await;

    drop((prepare, execute, reconcile, webhooks, relay, api));
    fleet.stop().await;
}
