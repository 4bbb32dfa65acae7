//! The metric names this crate emits, taken from `fleet_runtime::metric_names` (which
//! owns every name), with the labels this crate attaches. All label values are bounded:
//! `queue` is a wire name, `reason` a short fixed code from the handler; never ids.

pub(crate) use fleet_runtime::metric_names::{
    // {queue, op}: acks/nacks that were not sent, op = ack | nack.
    ACK_FAILURES_TOTAL,
    // {role}: reconnect attempts after a lost connection, role = consumer | publisher.
    BROKER_RECONNECTS_TOTAL,
    // {queue, outcome}: deliveries settled, outcome = ack | retry | dead_letter.
    MESSAGES_CONSUMED_TOTAL,
    // {queue, reason}: messages this fleet dead-lettered with a reason header.
    MESSAGES_DEAD_LETTERED_TOTAL,
    // {queue, outcome}: publishes, outcome = confirmed | failed.
    MESSAGES_PUBLISHED_TOTAL,
};
