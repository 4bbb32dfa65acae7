//! The trace of an operation as each component continues it: the context a door was given
//! (or a new trace when it was given none, or a malformed one), a new span id for every hop,
//! and the `tracing` spans whose fields (`trace_id`, `span_id`, and the request or
//! operation id) every log line written inside them inherits.
//!
//! The rules of the value itself live in `fleet_core::trace_context`; this module only
//! adds the random ids and the spans.

use fleet_core::trace_context::TraceParent;

/// The context for this hop: a new span of the trace `given` names when it is a
/// well-formed `traceparent`, otherwise a new trace (never an error: see
/// `fleet_core::trace_context`).
pub fn continue_or_start(given: Option<&str>) -> TraceParent {
    match given.and_then(TraceParent::parse) {
        Some(parent) => parent.hop(random()),
        None => TraceParent::new_trace(random()),
    }
}

/// A new span of `parent`'s trace (what this hop sends on as its own `traceparent`).
pub fn next_hop(parent: &TraceParent) -> TraceParent {
    parent.hop(random())
}

/// The span of one operation's work in this component: log lines inside it carry the
/// operation id and the trace and span ids.
pub fn operation_span(operation_id: &str, trace: &TraceParent) -> tracing::Span {
    let span = tracing::info_span!(
        "operation",
        operation_id,
        trace_id = %trace.trace_id_hex(),
        span_id = %trace.span_id_hex(),
    );
    crate::otel::set_parent(&span, trace);
    span
}

/// The span of one request at a door: log lines inside it carry the request id and the
/// trace and span ids (and, once known, the operation id, see
/// [`record_operation`]).
pub fn request_span(request_id: &str, trace: &TraceParent) -> tracing::Span {
    let span = tracing::info_span!(
        "request",
        request_id,
        trace_id = %trace.trace_id_hex(),
        span_id = %trace.span_id_hex(),
        operation_id = tracing::field::Empty,
    );
    crate::otel::set_parent(&span, trace);
    span
}

/// Names the operation a request turned out to be about, on the current request span.
pub fn record_operation(operation_id: &str) {
    tracing::Span::current().record("operation_id", operation_id);
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // A source that fails leaves zeros, which `fleet_core::trace_context` turns into a
    // valid (if not unique) id: tracing must never stop the work it describes.
    let _ = getrandom::fill(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_context_is_continued_with_a_new_span() {
        let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let hop = continue_or_start(Some(given));
        assert_eq!(hop.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_ne!(hop.span_id_hex(), "00f067aa0ba902b7");
        assert_eq!(next_hop(&hop).trace_id(), hop.trace_id());
    }

    #[test]
    fn none_or_a_malformed_one_starts_a_new_trace() {
        let a = continue_or_start(None);
        let b = continue_or_start(Some("00-zz-zz-01"));
        assert_ne!(a.trace_id(), b.trace_id());
        assert!(a.sampled() && b.sampled());
    }
}
