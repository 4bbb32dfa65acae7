//! Optional export of the fleet's spans to an OpenTelemetry collector (OTLP). Off unless
//! the standard `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is
//! set.

use fleet_core::trace_context::TraceParent;

/// Makes `span` a child of `trace` in the exported trace (a no-op while export is off).
pub(crate) fn set_parent(_span: &tracing::Span, _trace: &TraceParent) {}
