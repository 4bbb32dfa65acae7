//! Process metrics (CPU seconds, memory, file descriptors, threads, start time) under the
//! standard Prometheus names, so stock dashboards work: read by the `metrics-process`
//! crate from the operating system at each scrape, and recorded through the same recorder
//! as every other metric. Read on demand rather than by a background task, so a scrape
//! always sees current values and nothing runs between scrapes.
//!
//! `process_cpu_seconds_total` is exported as a gauge: the `metrics` counter type holds
//! whole numbers, and CPU seconds are fractional. `rate()` reads it as it reads a counter.

use std::sync::OnceLock;

use metrics_process::Collector;

fn collector() -> &'static Collector {
    static COLLECTOR: OnceLock<Collector> = OnceLock::new();
    COLLECTOR.get_or_init(Collector::default)
}

/// Gives each process metric its help text and unit (once the recorder is installed).
pub(crate) fn describe_process_metrics() {
    collector().describe();
}

/// Reads the process's current figures into the recorder; called just before a render.
pub(crate) fn collect_process_metrics() {
    collector().collect();
}
