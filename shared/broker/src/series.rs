//! The broker series a process owns, created at zero when it starts. The exporter shows a
//! counter only once it has been touched, so without this a dashboard or an alert sees a
//! (queue, reason) only after its first dead letter, and `increase()` misses that first
//! one. Every label value here is known in advance: the queue, the outcomes this crate
//! counts, and the reasons the handler can give.

use crate::config::Queue;
use crate::disposition::RETRIES_EXHAUSTED;
use crate::metric_names::{
    ACK_FAILURES_TOTAL, BROKER_RECONNECTS_TOTAL, MESSAGES_CONSUMED_TOTAL,
    MESSAGES_DEAD_LETTERED_TOTAL, MESSAGES_PUBLISHED_TOTAL,
};

/// The series of a consumer of `queue` whose handler dead-letters with `reasons`
/// (`retries_exhausted` is added: any queue may exhaust its retries).
pub fn consumer_series_at_zero(queue: Queue, reasons: &[&'static str]) {
    let name = queue.wire_name();
    for outcome in ["ack", "retry", "wait", "dead_letter"] {
        metrics::counter!(MESSAGES_CONSUMED_TOTAL, "queue" => name, "outcome" => outcome)
            .increment(0);
    }
    for reason in reasons.iter().copied().chain([RETRIES_EXHAUSTED]) {
        metrics::counter!(MESSAGES_DEAD_LETTERED_TOTAL, "queue" => name, "reason" => reason)
            .increment(0);
    }
    for op in ["ack", "nack"] {
        metrics::counter!(ACK_FAILURES_TOTAL, "queue" => name, "op" => op).increment(0);
    }
    metrics::counter!(BROKER_RECONNECTS_TOTAL, "role" => "consumer").increment(0);
}

/// The series of a process that publishes to `queues` with a [`crate::Publisher`].
pub fn publisher_series_at_zero(queues: &[Queue]) {
    for queue in queues {
        for outcome in ["confirmed", "failed"] {
            metrics::counter!(MESSAGES_PUBLISHED_TOTAL, "queue" => queue.wire_name(), "outcome" => outcome)
                .increment(0);
        }
    }
    metrics::counter!(BROKER_RECONNECTS_TOTAL, "role" => "publisher").increment(0);
}
