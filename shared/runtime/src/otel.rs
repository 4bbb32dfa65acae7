//! Optional export of the fleet's spans over OTLP/HTTP (protobuf).
//!
//! Off unless the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: then a worker's spans go to that
//! collector, under the service name of its binary (`fleet-api`, `fleet-execute`, ...).
//! A batch processor exports from its own thread: a collector that is down or slow only
//! loses spans (its queue is bounded), it never blocks or fails the work. The exporter
//! reads the other standard settings itself (`OTEL_BSP_SCHEDULE_DELAY`, headers, timeout).
//!
//! The span of a request, intake message or operation is made the child of the fleet's
//! own trace context ([`set_parent`]), so the exported trace id is the `traceparent`'s.

use std::sync::OnceLock;

use fleet_core::trace_context::TraceParent;
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The settings that turn export on (either is enough; the second names the traces
/// endpoint itself rather than the collector's base address).
const ENDPOINT_SETTINGS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// The process's exporting provider, kept to flush it on shutdown.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether an OTLP endpoint is configured.
fn export_configured() -> bool {
    ENDPOINT_SETTINGS
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// The tracer whose spans are exported as `service_name`, when an endpoint is configured.
/// A configuration the exporter refuses is said once and export stays off: tracing is an
/// aid, never a reason not to start.
pub(crate) fn tracer(service_name: &str) -> Option<SdkTracer> {
    if !export_configured() {
        return None;
    }
    if let Some(provider) = PROVIDER.get() {
        return Some(provider.tracer("fleet"));
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("OTLP span export is off: {e}");
            return None;
        }
    };
    let resource = opentelemetry_sdk::Resource::builder_empty()
        .with_service_name(service_name.to_owned())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let provider = PROVIDER.get_or_init(|| provider);
    Some(provider.tracer("fleet"))
}

/// Exports the spans still queued and stops the exporter (a worker's last step). Blocks
/// for at most the exporter's timeout; nothing when export is off.
pub fn flush_spans() {
    if let Some(provider) = PROVIDER.get() {
        if let Err(e) = provider.shutdown() {
            tracing::warn!(error = %e, "flushing the exported spans failed");
        }
    }
}

/// Makes `span` a child of `trace` in the exported trace: same trace id, its parent the
/// caller's span. Nothing when export is off (the span has no OpenTelemetry layer).
pub(crate) fn set_parent(span: &tracing::Span, trace: &TraceParent) {
    if PROVIDER.get().is_none() {
        return;
    }
    let remote = SpanContext::new(
        TraceId::from_bytes(trace.trace_id()),
        SpanId::from_bytes(trace.span_id()),
        TraceFlags::new(trace.flags()),
        true,
        TraceState::default(),
    );
    let parent = opentelemetry::Context::new().with_remote_span_context(remote);
    // Fails only when the span has no OpenTelemetry layer, i.e. export is off.
    let _ = span.set_parent(parent);
}
