//! Where the fleet's spans would be handed to an OpenTelemetry exporter. No exporter is
//! wired yet: spans are only the fields of the log lines (`crate::trace`), and this hook
//! does nothing.

use fleet_core::trace_context::TraceParent;

/// Makes `span` a child of `trace` in an exported trace (nothing while no exporter is
/// wired).
pub(crate) fn set_parent(_span: &tracing::Span, _trace: &TraceParent) {}
