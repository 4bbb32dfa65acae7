//! The machine a figure was measured on: it goes into every report, because a number
//! without its machine means nothing.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_gib: f64,
    pub kernel: String,
    /// 1-minute load average when the run started (other work on a shared machine).
    pub load_1m_at_start: f64,
    pub postgres: String,
}

fn first_value(text: &str, key: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    Some(line.split_once(':')?.1.trim().to_owned())
}

impl Machine {
    pub fn read(postgres: String) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kib: f64 = first_value(&meminfo, "MemTotal")
            .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
            .unwrap_or(0.0);
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()));
        Machine {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model: first_value(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
            memory_gib: (mem_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
            load_1m_at_start: load.unwrap_or(0.0),
            postgres,
        }
    }

    pub fn line(&self) -> String {
        format!(
            "{} CPUs ({}), {:.1} GiB, Linux {}, load {:.2} at start, PostgreSQL {}",
            self.cpus,
            self.cpu_model,
            self.memory_gib,
            self.kernel,
            self.load_1m_at_start,
            self.postgres
        )
    }
}
