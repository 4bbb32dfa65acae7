//! The series fleet-webhook-ingest owns, created at zero when it starts, for the halves
//! this process runs, so that dashboards and alerts see every (provider, outcome) from the
//! first scrape rather than from its first occurrence.

use fleet_broker::Queue;
use fleet_runtime::metric_names as m;
use fleet_store::WebhookOutcome;

use crate::settings::{Mode, KNOWN_PROVIDERS};

/// What the receiver counts: every delivery it refuses or cannot hand on.
const RECEIVER_OUTCOMES: [&str; 4] = [
    "rejected_signature",
    "rejected_request",
    "receiver_busy",
    "broker_unavailable",
];

/// Every reason the consumer dead-letters a message with (envelope, signature, event).
pub const DEAD_LETTER_REASONS: &[&str] = &[
    "oversized",
    "malformed",
    "unsupported_schema",
    "signature_invalid",
    "signature_expired",
    "unknown_provider",
    "malformed_event",
    "missing_field",
    "invalid_field",
];

pub fn series_at_zero(mode: Mode) {
    for provider in KNOWN_PROVIDERS.iter().copied() {
        if mode.receives() {
            for outcome in RECEIVER_OUTCOMES {
                metrics::counter!(m::WEBHOOK_EVENTS_TOTAL, "provider" => provider, "outcome" => outcome).increment(0);
            }
        }
        if mode.consumes() {
            for outcome in WebhookOutcome::LABELS {
                metrics::counter!(m::WEBHOOK_EVENTS_TOTAL, "provider" => provider, "outcome" => outcome).increment(0);
            }
            // Registering a histogram renders it with empty buckets.
            let _ =
                metrics::histogram!(m::WEBHOOK_RECEIVE_TO_APPLY_SECONDS, "provider" => provider);
        }
    }
    if mode.receives() {
        fleet_broker::publisher_series_at_zero(&[Queue::WebhooksIngest]);
    }
    if mode.consumes() {
        fleet_broker::consumer_series_at_zero(Queue::WebhooksIngest, DEAD_LETTER_REASONS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::IngestError;
    use crate::envelope::EnvelopeError;
    use crate::event::EventError;
    use crate::signature::Rejection;
    use fleet_broker::Disposition;

    #[test]
    fn every_dead_letter_reason_of_the_consumer_is_listed() {
        let errors = [
            IngestError::Envelope(EnvelopeError::Oversized),
            IngestError::Envelope(EnvelopeError::Malformed),
            IngestError::Envelope(EnvelopeError::UnsupportedSchema),
            IngestError::Envelope(EnvelopeError::Unsigned),
            IngestError::UnknownProvider,
            IngestError::Signature(Rejection::TimestampOutOfTolerance),
            IngestError::Signature(Rejection::NoMatchingSignature),
            IngestError::Event(EventError::NotAnObject),
            IngestError::Event(EventError::Missing("type")),
            IngestError::Event(EventError::Invalid("amount_minor")),
        ];
        for error in errors {
            match error.disposition() {
                Disposition::DeadLetter { reason } => {
                    assert!(DEAD_LETTER_REASONS.contains(&reason.as_str()), "{reason}")
                }
                other => panic!("{error} is not dead-lettered: {other:?}"),
            }
        }
    }
}
