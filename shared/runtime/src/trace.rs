//! The trace of an operation as each component continues it: the context a door was given
//! (or a new trace when it was given none, or a malformed one), a new span id for every hop,
//! and the `tracing` spans whose fields (`trace_id`, `span_id`, and the request or
//! operation id) every log line written inside them inherits.
//!
//! The rules of the value itself live in `fleet_core::trace_context`; this module only
//! adds the random ids and the spans.

use std::future::Future;

use fleet_core::trace_context::TraceParent;
use tracing::Instrument;

tokio::task_local! {
    /// The trace of the work this future does: what the broker's publisher and the
    /// providers' client send on as `traceparent`.
    static CURRENT: TraceParent;
}

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

/// The span of one message at the intake queue's door: like [`request_span`], without a
/// request id (a message has none).
pub fn message_span(trace: &TraceParent) -> tracing::Span {
    let span = tracing::info_span!(
        "message",
        trace_id = %trace.trace_id_hex(),
        span_id = %trace.span_id_hex(),
        operation_id = tracing::field::Empty,
    );
    crate::otel::set_parent(&span, trace);
    span
}

/// Middleware of a door without request ids (the webhook receiver): the request is handled
/// under the caller's `traceparent` when well formed (a new trace otherwise, never a
/// refusal), inside a [`message_span`].
pub async fn traced_request(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let given = request
        .headers()
        .get(fleet_core::trace_context::HEADER)
        .and_then(|v| v.to_str().ok());
    let hop = continue_or_start(given);
    let span = message_span(&hop);
    scoped(hop, next.run(request).instrument(span)).await
}

/// Names the operation a request turned out to be about, on the current request span.
pub fn record_operation(operation_id: &str) {
    tracing::Span::current().record("operation_id", operation_id);
}

/// The trace of the work in progress, if a door or a component set one ([`scoped`]).
pub fn current() -> Option<TraceParent> {
    CURRENT.try_with(|t| *t).ok()
}

/// The `traceparent` to send with a message or request made now: the current hop's, so
/// that the receiver's span is a child of this one.
pub fn current_header() -> Option<String> {
    current().map(|t| t.to_string())
}

/// The trace an intake stores with the operation it writes: the door's own (the trace in
/// progress), or a new one when the door set none.
pub fn at_intake() -> TraceParent {
    current().unwrap_or_else(|| continue_or_start(None))
}

/// Runs `fut` under `trace` (see [`current`]).
pub async fn scoped<F: Future>(trace: TraceParent, fut: F) -> F::Output {
    CURRENT.scope(trace, fut).await
}

/// The hop of an operation's work in this component: a new span of the trace its intake
/// stored (`stored`, the operation's `trace_parent`), or, for an operation stored without
/// one, of the trace in progress, or else a new trace.
pub fn for_operation(stored: Option<&str>) -> TraceParent {
    match stored.and_then(TraceParent::parse).or_else(current) {
        Some(parent) => next_hop(&parent),
        None => TraceParent::new_trace(random()),
    }
}

/// Runs `fut`, the work of one operation, under its trace ([`for_operation`]) and inside
/// its span ([`operation_span`]): what it logs carries the operation id and trace id, what
/// it sends carries the trace.
pub async fn in_operation<F: Future>(
    operation_id: &str,
    stored: Option<&str>,
    fut: F,
) -> F::Output {
    let trace = for_operation(stored);
    scoped(trace, fut.instrument(operation_span(operation_id, &trace))).await
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

    #[tokio::test]
    async fn an_operations_stored_trace_wins_over_the_one_in_progress() {
        let stored = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let bell = continue_or_start(None);
        let (inside, unstored) = scoped(bell, async {
            let inside = in_operation("op_1", Some(stored), async { current() }).await;
            (inside, for_operation(None))
        })
        .await;
        assert_eq!(
            inside.unwrap().trace_id_hex(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(unstored.trace_id(), bell.trace_id());
        assert_ne!(unstored.span_id(), bell.span_id());
        assert_eq!(current(), None);
    }

    #[test]
    fn none_or_a_malformed_one_starts_a_new_trace() {
        let a = continue_or_start(None);
        let b = continue_or_start(Some("00-zz-zz-01"));
        assert_ne!(a.trace_id(), b.trace_id());
        assert!(a.sampled() && b.sampled());
    }
}
