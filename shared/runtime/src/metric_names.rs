//! Every Prometheus metric name the fleet exports, in one place. Dashboards and alert
//! rules use only these names; labels carry bounded values (action, provider, outcome,
//! queue, reason), never ids.

pub const OPERATIONS_UNKNOWN: &str = "fleet_operations_unknown";
pub const OPERATIONS_ESCALATED: &str = "fleet_operations_escalated";
pub const OLDEST_UNKNOWN_AGE_SECONDS: &str = "fleet_oldest_unknown_age_seconds";
pub const OPERATIONS_BY_STATUS: &str = "fleet_operations_by_status";
pub const APPROVALS_PENDING: &str = "fleet_approvals_pending";
pub const APPROVALS_EXPIRING_SOON: &str = "fleet_approvals_expiring_soon";
pub const TIME_TO_RECONCILIATION_SECONDS: &str = "fleet_time_to_reconciliation_seconds";
pub const PROVIDER_CALLS_TOTAL: &str = "fleet_provider_calls_total";
pub const PROVIDER_CALL_DURATION_SECONDS: &str = "fleet_provider_call_duration_seconds";
pub const PROVIDER_THROTTLED_TOTAL: &str = "fleet_provider_throttled_total";
pub const PROVIDER_CREDENTIALS_REFUSED_TOTAL: &str = "fleet_provider_credentials_refused_total";
pub const PROVIDER_SLOT_WAIT_SECONDS: &str = "fleet_provider_slot_wait_seconds";
pub const TRANSITIONS_TOTAL: &str = "fleet_transitions_total";
pub const LEASE_EXPIRED_TOTAL: &str = "fleet_lease_expired_total";
pub const FENCED_OUT_TOTAL: &str = "fleet_fenced_out_total";
pub const VERSION_CONFLICTS_TOTAL: &str = "fleet_version_conflicts_total";
pub const APPROVALS_RENEWED_TOTAL: &str = "fleet_approvals_renewed_total";
pub const MANUAL_INVESTIGATIONS_TOTAL: &str = "fleet_manual_investigations_total";
pub const WEBHOOK_EVENTS_TOTAL: &str = "fleet_webhook_events_total";
pub const WEBHOOK_RECEIVE_TO_APPLY_SECONDS: &str = "fleet_webhook_receive_to_apply_seconds";
pub const MESSAGES_CONSUMED_TOTAL: &str = "fleet_messages_consumed_total";
pub const MESSAGES_DEAD_LETTERED_TOTAL: &str = "fleet_messages_dead_lettered_total";
pub const MESSAGES_PUBLISHED_TOTAL: &str = "fleet_messages_published_total";
pub const ACK_FAILURES_TOTAL: &str = "fleet_ack_failures_total";
pub const BROKER_RECONNECTS_TOTAL: &str = "fleet_broker_reconnects_total";
pub const INTENTS_PREPARED_TOTAL: &str = "fleet_intents_prepared_total";
pub const END_TO_END_SECONDS: &str = "fleet_end_to_end_seconds";
pub const BUILD_INFO: &str = "fleet_build_info";
pub const RECONCILE_SWEEPS_TOTAL: &str = "fleet_reconcile_sweeps_total";
pub const DUPLICATE_EFFECTS_DETECTED_TOTAL: &str = "fleet_duplicate_effects_detected_total";
pub const API_REQUESTS_TOTAL: &str = "fleet_api_requests_total";
pub const API_WAITING_REQUESTS: &str = "fleet_api_waiting_requests";
pub const API_REQUEST_DURATION_SECONDS: &str = "fleet_api_request_duration_seconds";
pub const EVENTS_PUBLISHED_TOTAL: &str = "fleet_events_published_total";
pub const EVENTS_PUBLISH_FAILURES_TOTAL: &str = "fleet_events_publish_failures_total";
pub const OUTBOX_BACKLOG: &str = "fleet_outbox_backlog";
pub const OUTBOX_OLDEST_UNPUBLISHED_AGE_SECONDS: &str =
    "fleet_outbox_oldest_unpublished_age_seconds";
pub const DEAD_LETTER_QUEUE_DEPTH: &str = "fleet_dead_letter_queue_depth";
/// Dead letters kept in Postgres that nobody replayed or discarded yet, per work queue.
pub const DEAD_LETTERS_KEPT: &str = "fleet_dead_letters_kept";
pub const NOTIFICATIONS_SENT_TOTAL: &str = "fleet_notifications_sent_total";
pub const NOTIFICATIONS_FAILED_TOTAL: &str = "fleet_notifications_failed_total";

// Process metrics, read at each scrape by the metrics-process crate (standard Prometheus
// names, so stock dashboards work; see `process.rs`).
pub const PROCESS_CPU_SECONDS_TOTAL: &str = "process_cpu_seconds_total";
pub const PROCESS_RESIDENT_MEMORY_BYTES: &str = "process_resident_memory_bytes";
pub const PROCESS_VIRTUAL_MEMORY_BYTES: &str = "process_virtual_memory_bytes";
pub const PROCESS_VIRTUAL_MEMORY_MAX_BYTES: &str = "process_virtual_memory_max_bytes";
pub const PROCESS_OPEN_FDS: &str = "process_open_fds";
pub const PROCESS_MAX_FDS: &str = "process_max_fds";
pub const PROCESS_THREADS: &str = "process_threads";
pub const PROCESS_START_TIME_SECONDS: &str = "process_start_time_seconds";

/// Every `fleet_*` name above; `metrics::install_metrics` describes each one, and a test
/// checks that none is missing a description.
pub const ALL: &[&str] = &[
    RECONCILE_SWEEPS_TOTAL,
    DUPLICATE_EFFECTS_DETECTED_TOTAL,
    OPERATIONS_UNKNOWN,
    OPERATIONS_ESCALATED,
    OLDEST_UNKNOWN_AGE_SECONDS,
    OPERATIONS_BY_STATUS,
    APPROVALS_PENDING,
    APPROVALS_EXPIRING_SOON,
    TIME_TO_RECONCILIATION_SECONDS,
    PROVIDER_CALLS_TOTAL,
    PROVIDER_CALL_DURATION_SECONDS,
    PROVIDER_THROTTLED_TOTAL,
    PROVIDER_CREDENTIALS_REFUSED_TOTAL,
    PROVIDER_SLOT_WAIT_SECONDS,
    TRANSITIONS_TOTAL,
    LEASE_EXPIRED_TOTAL,
    FENCED_OUT_TOTAL,
    VERSION_CONFLICTS_TOTAL,
    APPROVALS_RENEWED_TOTAL,
    MANUAL_INVESTIGATIONS_TOTAL,
    WEBHOOK_EVENTS_TOTAL,
    WEBHOOK_RECEIVE_TO_APPLY_SECONDS,
    MESSAGES_CONSUMED_TOTAL,
    MESSAGES_DEAD_LETTERED_TOTAL,
    MESSAGES_PUBLISHED_TOTAL,
    ACK_FAILURES_TOTAL,
    BROKER_RECONNECTS_TOTAL,
    INTENTS_PREPARED_TOTAL,
    END_TO_END_SECONDS,
    BUILD_INFO,
    API_REQUESTS_TOTAL,
    API_WAITING_REQUESTS,
    API_REQUEST_DURATION_SECONDS,
    EVENTS_PUBLISHED_TOTAL,
    EVENTS_PUBLISH_FAILURES_TOTAL,
    OUTBOX_BACKLOG,
    OUTBOX_OLDEST_UNPUBLISHED_AGE_SECONDS,
    DEAD_LETTER_QUEUE_DEPTH,
    DEAD_LETTERS_KEPT,
    NOTIFICATIONS_SENT_TOTAL,
    NOTIFICATIONS_FAILED_TOTAL,
];
