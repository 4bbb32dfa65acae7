//! Process metrics (CPU seconds, memory, file descriptors, threads, start time) read from
//! `/proc/self` at scrape time and rendered in the Prometheus text format.
//!
//! Read on demand instead of by a background task: a scrape always sees current values
//! and nothing runs between scrapes. They are rendered directly rather than through the
//! `metrics` recorder because `process_cpu_seconds_total` is a fractional counter, which
//! the `metrics` counter type (u64) cannot hold. On a system without `/proc` this renders
//! nothing.

use std::fmt::Write as _;
use std::fs;

use crate::metric_names as names;

/// `USER_HZ`: the unit of the tick counts in `/proc/<pid>/stat`. The kernel fixes it at 100
/// for user space on every architecture we run on (x86_64, aarch64), independent of the
/// kernel's internal `HZ`.
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Appends the process metrics to `out` in the Prometheus text exposition format.
pub(crate) fn render_process_metrics(out: &mut String) {
    if let Some(stat) = read_stat() {
        let cpu = (stat.utime_ticks + stat.stime_ticks) as f64 / CLOCK_TICKS_PER_SECOND;
        write_metric(
            out,
            names::PROCESS_CPU_SECONDS_TOTAL,
            "counter",
            "Total user and system CPU time spent in seconds.",
            cpu,
        );
        write_metric(
            out,
            names::PROCESS_VIRTUAL_MEMORY_BYTES,
            "gauge",
            "Virtual memory size in bytes.",
            stat.vsize_bytes as f64,
        );
        write_metric(
            out,
            names::PROCESS_THREADS,
            "gauge",
            "Number of OS threads in the process.",
            stat.threads as f64,
        );
        if let Some(boot_time) = read_boot_time_seconds() {
            let start = boot_time as f64 + stat.start_ticks as f64 / CLOCK_TICKS_PER_SECOND;
            write_metric(
                out,
                names::PROCESS_START_TIME_SECONDS,
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                start,
            );
        }
    }
    if let Some(rss) = read_rss_bytes() {
        write_metric(
            out,
            names::PROCESS_RESIDENT_MEMORY_BYTES,
            "gauge",
            "Resident memory size in bytes.",
            rss as f64,
        );
    }
    if let Ok(entries) = fs::read_dir("/proc/self/fd") {
        write_metric(
            out,
            names::PROCESS_OPEN_FDS,
            "gauge",
            "Number of open file descriptors.",
            entries.count() as f64,
        );
    }
    if let Some(max) = read_max_fds() {
        write_metric(
            out,
            names::PROCESS_MAX_FDS,
            "gauge",
            "Maximum number of open file descriptors.",
            max as f64,
        );
    }
}

fn write_metric(out: &mut String, name: &str, kind: &str, help: &str, value: f64) {
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n\n"
    );
}

#[derive(Debug, PartialEq)]
struct Stat {
    utime_ticks: u64,
    stime_ticks: u64,
    threads: u64,
    start_ticks: u64,
    vsize_bytes: u64,
}

fn read_stat() -> Option<Stat> {
    parse_stat(&fs::read_to_string("/proc/self/stat").ok()?)
}

/// Parses `/proc/<pid>/stat` (proc(5)). The command name (field 2) is in parentheses and
/// may contain spaces, so fields are counted from the last `)`.
fn parse_stat(content: &str) -> Option<Stat> {
    let after_comm = &content[content.rfind(')')? + 1..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // `fields[0]` is field 3 (state), so field N is at index N - 3.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        utime_ticks: field(14)?,
        stime_ticks: field(15)?,
        threads: field(20)?,
        start_ticks: field(22)?,
        vsize_bytes: field(23)?,
    })
}

/// `VmRSS` from `/proc/self/status` is in kB, which avoids assuming a page size.
fn read_rss_bytes() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn read_boot_time_seconds() -> Option<u64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

fn read_max_fds() -> Option<u64> {
    let limits = fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (tokio (worker) 1) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    250 75 0 0 20 0 9 0 123456 104857600 2560 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                utime_ticks: 250,
                stime_ticks: 75,
                threads: 9,
                start_ticks: 123456,
                vsize_bytes: 104857600
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn renders_process_metrics_on_linux() {
        let mut out = String::new();
        render_process_metrics(&mut out);
        if std::path::Path::new("/proc/self/stat").exists() {
            for name in [
                names::PROCESS_CPU_SECONDS_TOTAL,
                names::PROCESS_RESIDENT_MEMORY_BYTES,
                names::PROCESS_OPEN_FDS,
                names::PROCESS_START_TIME_SECONDS,
            ] {
                assert!(
                    out.contains(&format!("# TYPE {name} ")),
                    "{name} missing from:\n{out}"
                );
            }
            let rss_line = out
                .lines()
                .find(|l| l.starts_with("process_resident_memory_bytes "))
                .unwrap();
            let rss: f64 = rss_line.split(' ').nth(1).unwrap().parse().unwrap();
            assert!(rss > 0.0);
        }
    }
}
