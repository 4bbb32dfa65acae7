//! The process-wide Prometheus recorder: explicit histogram buckets for every histogram
//! the fleet records (without them the exporter renders summaries, which cannot be
//! aggregated across replicas), a description for every name in [`metric_names`], and
//! `fleet_build_info{component,version} 1`.
//!
//! There is no built-in HTTP listener: `/metrics` is served by [`crate::admin`], which
//! also reads the process metrics (see [`crate::process`]) at scrape time.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::Unit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::metric_names as names;

/// How often histogram samples are folded into their buckets when nobody scrapes, so
/// that memory stays bounded between scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Buckets for a single provider HTTP call: 1 ms … 60 s (the call timeout is well inside).
pub const CALL_DURATION_BUCKETS_SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Buckets for the wait for a slot of a rate-limited provider: none at all (most
/// requests, below the rate) … a minute (a long queue, or a provider's longest pause).
pub const SLOT_WAIT_BUCKETS_SECONDS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Buckets for a webhook from its receipt to its decision: milliseconds normally, up to
/// an hour when the consumer was down and the queue kept the events.
pub const WEBHOOK_LATENCY_BUCKETS_SECONDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
    3600.0,
];

/// Buckets for one fleet-api request, from its arrival to its answer: 1 ms … 90 s. Most
/// answers take milliseconds; a long-poll (`wait_for`, at most 60 s) ends at its timeout or
/// when the operation moves, hence the buckets up to and just past a minute. Long-polls
/// have a route label of their own (see fleet-api's `observe`), so their durations never
/// enter the quantiles of the other routes; the top buckets serve them, and a request
/// queued behind `API_REQUEST_QUEUE_MS`.
pub const API_REQUEST_DURATION_BUCKETS_SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 90.0,
];

/// Buckets for lifecycle spans measured in minutes to a day: 100 ms … 24 h.
pub const LIFECYCLE_BUCKETS_SECONDS: &[f64] = &[
    0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0,
    43200.0, 86400.0,
];

#[derive(Debug, Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram(&'static [f64]),
}

struct Description {
    name: &'static str,
    kind: Kind,
    unit: Unit,
    help: &'static str,
}

const fn describe(name: &'static str, kind: Kind, unit: Unit, help: &'static str) -> Description {
    Description {
        name,
        kind,
        unit,
        help,
    }
}

/// One row per metric: kind, unit, help text. A test checks it covers `metric_names::ALL`.
const DESCRIPTIONS: &[Description] = &[
    describe(
        names::DUPLICATE_EFFECTS_DETECTED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Operations whose post-settlement audit found more than one provider object for our reference (a data incident; should stay 0).",
    ),
    describe(
        names::RECONCILE_SWEEPS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Sweeps run by reconcile (outcome: ok, error); a flat rate means the sweeper stopped.",
    ),
    describe(
        names::OPERATIONS_UNKNOWN,
        Kind::Gauge,
        Unit::Count,
        "Operations in status unknown, from Postgres (computed by fleet-reconcile only).",
    ),
    describe(
        names::OPERATIONS_ESCALATED,
        Kind::Gauge,
        Unit::Count,
        "Operations escalated to an operator and not yet resolved, from Postgres.",
    ),
    describe(
        names::OLDEST_UNKNOWN_AGE_SECONDS,
        Kind::Gauge,
        Unit::Seconds,
        "Age of the oldest unknown operation (now() - unknown_since), from Postgres.",
    ),
    describe(
        names::OPERATIONS_BY_STATUS,
        Kind::Gauge,
        Unit::Count,
        "Operations per status, from Postgres (label: status).",
    ),
    describe(
        names::APPROVALS_PENDING,
        Kind::Gauge,
        Unit::Count,
        "Operations waiting for their approvers (pending, not started, window open), from Postgres (computed by fleet-reconcile only).",
    ),
    describe(
        names::APPROVALS_EXPIRING_SOON,
        Kind::Gauge,
        Unit::Count,
        "Pending approvals whose window closes within APPROVALS_EXPIRING_SOON_S (default 15 min), from Postgres (computed by fleet-reconcile only).",
    ),
    describe(
        names::TIME_TO_RECONCILIATION_SECONDS,
        Kind::Histogram(LIFECYCLE_BUCKETS_SECONDS),
        Unit::Seconds,
        "Time from unknown_since to resolved_at for operations reconcile settled.",
    ),
    describe(
        names::PROVIDER_CALLS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Provider calls made (labels: provider, action, outcome).",
    ),
    describe(
        names::PROVIDER_CALL_DURATION_SECONDS,
        Kind::Histogram(CALL_DURATION_BUCKETS_SECONDS),
        Unit::Seconds,
        "Duration of one provider HTTP call, including timeouts and, for a rate-limited provider, the waits for its slots (labels: provider, action).",
    ),
    describe(
        names::PROVIDER_THROTTLED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Provider answers 429 (rate limited), creates and lookups alike (label: provider).",
    ),
    describe(
        names::PROVIDER_CREDENTIALS_REFUSED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Provider answers 401 or 403: the fleet's credentials were refused (a revoked or restricted API key, a connected account the key may not act for), creates and lookups alike (label: provider).",
    ),
    describe(
        names::PROVIDER_SLOT_WAIT_SECONDS,
        Kind::Histogram(SLOT_WAIT_BUCKETS_SECONDS),
        Unit::Seconds,
        "Time a request to a rate-limited provider waited for its slot in the shared schedule (label: provider).",
    ),
    describe(
        names::TRANSITIONS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Operation status transitions applied (labels: from, to).",
    ),
    describe(
        names::LEASE_EXPIRED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "In-progress operations whose lease expired and were moved to unknown.",
    ),
    describe(
        names::FENCED_OUT_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Writes refused because the worker's fence was stale (another claim won).",
    ),
    describe(
        names::VERSION_CONFLICTS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Conditional updates refused by the provider because the version moved.",
    ),
    describe(
        names::APPROVALS_RENEWED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Intents prepared that supersede an earlier operation (a correction needing a new approval).",
    ),
    describe(
        names::MANUAL_INVESTIGATIONS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Operator decisions recorded (resolve, dispute), counted from Postgres by fleet-reconcile.",
    ),
    describe(
        names::WEBHOOK_EVENTS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Webhook deliveries by what was done with them (labels: provider, outcome = new | \
         duplicate | ignored_transition | escalated | unlinked | ignored_type | \
         rejected_signature | rejected_request | broker_unavailable).",
    ),
    describe(
        names::WEBHOOK_RECEIVE_TO_APPLY_SECONDS,
        Kind::Histogram(WEBHOOK_LATENCY_BUCKETS_SECONDS),
        Unit::Seconds,
        "Time from the receiver accepting a webhook to the consumer committing its decision \
         (label: provider).",
    ),
    describe(
        names::MESSAGES_CONSUMED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Broker messages handled (labels: queue, outcome).",
    ),
    describe(
        names::MESSAGES_DEAD_LETTERED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Broker messages dead-lettered (labels: queue, reason).",
    ),
    describe(
        names::MESSAGES_PUBLISHED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Broker messages published and confirmed (label: exchange or queue).",
    ),
    describe(
        names::ACK_FAILURES_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Acks or nacks the broker did not confirm (the message will be redelivered).",
    ),
    describe(
        names::BROKER_RECONNECTS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Broker connections re-established after a failure.",
    ),
    describe(
        names::INTENTS_PREPARED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "intent.v1 messages turned into operation rows (label: outcome).",
    ),
    describe(
        names::END_TO_END_SECONDS,
        Kind::Histogram(LIFECYCLE_BUCKETS_SECONDS),
        Unit::Seconds,
        "Time from approval to a final status (labels: action, outcome).",
    ),
    describe(
        names::EVENTS_PUBLISHED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Outcome events the broker confirmed and the relay marked published (label: type, \
         the short event type).",
    ),
    describe(
        names::EVENTS_PUBLISH_FAILURES_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Outcome events the broker did not confirm; they stay in the outbox and are published again.",
    ),
    describe(
        names::OUTBOX_BACKLOG,
        Kind::Gauge,
        Unit::Count,
        "Outcome events in the outbox not yet published, from Postgres (computed by fleet-relay).",
    ),
    describe(
        names::OUTBOX_OLDEST_UNPUBLISHED_AGE_SECONDS,
        Kind::Gauge,
        Unit::Seconds,
        "Age of the oldest unpublished outcome event (now() - the change it reports), from \
         Postgres; 0 when the outbox is drained.",
    ),
    describe(
        names::DEAD_LETTER_QUEUE_DEPTH,
        Kind::Gauge,
        Unit::Count,
        "Messages waiting in each work queue's dead-letter queue (label: queue), read from the \
         broker by fleet-relay.",
    ),
    describe(
        names::DEAD_LETTERS_KEPT,
        Kind::Gauge,
        Unit::Count,
        "Dead letters fleet-relay keeps in Postgres that nobody replayed or discarded yet \
         (label: queue).",
    ),
    describe(
        names::NOTIFICATIONS_SENT_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Approvers' notifications fleet-relay delivered (label: channel_kind, webhook or email).",
    ),
    describe(
        names::NOTIFICATIONS_FAILED_TOTAL,
        Kind::Counter,
        Unit::Count,
        "Approvers' notification attempts that failed and wait for a retry (label: channel_kind).",
    ),
    describe(
        names::BUILD_INFO,
        Kind::Gauge,
        Unit::Count,
        "Always 1; labels carry the component and version of the running build.",
    ),
    describe(
        names::API_REQUESTS_TOTAL,
        Kind::Counter,
        Unit::Count,
        "HTTP API requests answered (route: the route template, status: the HTTP status code).",
    ),
    describe(
        names::API_REQUEST_DURATION_SECONDS,
        Kind::Histogram(API_REQUEST_DURATION_BUCKETS_SECONDS),
        Unit::Seconds,
        "HTTP API requests from arrival to answer (route: the route template, with \
         `?wait_for` appended for a long-poll; method: GET, POST, … or other; status_class: 2xx, \
         4xx, 5xx, …).",
    ),
    describe(
        names::API_WAITING_REQUESTS,
        Kind::Gauge,
        Unit::Count,
        "HTTP API requests waiting on an operation (wait_for) right now; bounded by API_MAX_WAITERS.",
    ),
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the global Prometheus recorder (once per process) and records
/// `fleet_build_info{component, version} = 1` for `component`.
///
/// Calling it again (several workers in one test process) returns the same handle and
/// only adds that component's build-info series. If some other recorder was installed
/// first, the handle still renders but records nothing; a warning says so.
pub fn install_metrics(component: &'static str) -> PrometheusHandle {
    let handle = HANDLE.get_or_init(build_and_install).clone();
    metrics::gauge!(names::BUILD_INFO, "component" => component, "version" => env!("CARGO_PKG_VERSION"))
        .set(1.0);
    handle
}

fn build_and_install() -> PrometheusHandle {
    let mut builder = PrometheusBuilder::new();
    for d in DESCRIPTIONS {
        if let Kind::Histogram(buckets) = d.kind {
            builder = builder
                .set_buckets_for_metric(Matcher::Full(d.name.to_owned()), buckets)
                .expect("bucket lists are non-empty constants");
        }
    }
    let recorder = builder.build_recorder();
    let handle = recorder.handle();
    if let Err(error) = metrics::set_global_recorder(recorder) {
        tracing::warn!(%error, "another metrics recorder is installed; fleet metrics will not be recorded");
    }
    describe_all();
    crate::process::describe_process_metrics();
    spawn_upkeep(handle.clone());
    handle
}

fn describe_all() {
    for d in DESCRIPTIONS {
        match d.kind {
            Kind::Counter => metrics::describe_counter!(d.name, d.unit, d.help),
            Kind::Gauge => metrics::describe_gauge!(d.name, d.unit, d.help),
            Kind::Histogram(_) => metrics::describe_histogram!(d.name, d.unit, d.help),
        }
    }
}

/// A plain thread rather than a tokio task: `install_metrics` may run before (or
/// outside) a runtime, and this loop must outlive any one runtime in tests.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_INTERVAL);
            handle.run_upkeep();
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "could not start the metrics upkeep thread; histograms drain only on scrape");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_metric_name_is_described_exactly_once() {
        let described: Vec<&str> = DESCRIPTIONS.iter().map(|d| d.name).collect();
        let unique: BTreeSet<&str> = described.iter().copied().collect();
        assert_eq!(unique.len(), described.len(), "a name is described twice");
        let all: BTreeSet<&str> = names::ALL.iter().copied().collect();
        assert_eq!(unique, all);
    }

    #[test]
    fn histogram_buckets_are_strictly_increasing_and_cover_their_range() {
        for d in DESCRIPTIONS {
            if let Kind::Histogram(buckets) = d.kind {
                assert!(buckets.windows(2).all(|w| w[0] < w[1]), "{}", d.name);
                assert!(
                    d.name.ends_with("_seconds"),
                    "{} has seconds buckets",
                    d.name
                );
            }
        }
        assert_eq!(CALL_DURATION_BUCKETS_SECONDS.first(), Some(&0.001));
        assert_eq!(CALL_DURATION_BUCKETS_SECONDS.last(), Some(&60.0));
        assert_eq!(API_REQUEST_DURATION_BUCKETS_SECONDS.last(), Some(&90.0));
        assert_eq!(LIFECYCLE_BUCKETS_SECONDS.first(), Some(&0.1));
        assert_eq!(LIFECYCLE_BUCKETS_SECONDS.last(), Some(&86400.0));
    }
}
