//! What `/proc` says about a process (CPU time, peak RSS) and about the machine (busy
//! CPU time). Linux only; a missing or unreadable entry reads as `None`.

use std::collections::{HashMap, HashSet};

/// Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`; 100 on Linux).
pub fn clk_tck() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces and
/// parentheses, hence the split at the last `)`). Index 0 is field 3 (state).
fn stat_fields(pid: u32) -> Option<Vec<u64>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    Some(
        rest.split_whitespace()
            .skip(1)
            .map(|f| f.parse().unwrap_or(0))
            .collect(),
    )
}

/// utime + stime (fields 14 and 15), in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let f = stat_fields(pid)?;
    Some(f.get(10)? + f.get(11)?)
}

/// cutime + cstime (fields 16 and 17): CPU of the children this process has reaped.
pub fn reaped_children_ticks(pid: u32) -> Option<u64> {
    let f = stat_fields(pid)?;
    Some(f.get(12)? + f.get(13)?)
}

fn ppid(pid: u32) -> Option<u32> {
    // Field 4, the first number after the state.
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Peak resident set size (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Every process whose command name (`/proc/<pid>/comm`) is `comm`.
pub fn pids_named(comm: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == comm)
        })
        .collect()
}

/// CPU of every process named `comm` (a service such as Postgres, whose backends come and
/// go): the live processes' ticks by pid, plus what their root processes (the ones whose
/// parent has another name, e.g. the postmaster) have reaped from exited children.
#[derive(Debug, Clone, Default)]
pub struct ServiceTicks {
    pub live: HashMap<u32, u64>,
    pub reaped: u64,
}

impl ServiceTicks {
    pub fn read(comm: &str) -> ServiceTicks {
        let pids = pids_named(comm);
        let mut out = ServiceTicks::default();
        for &pid in &pids {
            if let Some(t) = cpu_ticks(pid) {
                out.live.insert(pid, t);
            }
            let is_root = ppid(pid).is_none_or(|p| !pids.contains(&p));
            if is_root {
                out.reaped += reaped_children_ticks(pid).unwrap_or(0);
            }
        }
        out
    }

    /// Ticks spent between `before` and `self`: processes alive now count from their
    /// earlier reading (or from 0 if they started since); exited ones through `reaped`.
    pub fn since(&self, before: &ServiceTicks) -> u64 {
        let live: u64 = self
            .live
            .iter()
            .map(|(pid, t)| t.saturating_sub(*before.live.get(pid).unwrap_or(&0)))
            .sum();
        live + self.reaped.saturating_sub(before.reaped)
    }

    /// Ticks spent between `before` and `self` by the live processes in `pids` alone.
    pub fn since_for(&self, before: &ServiceTicks, pids: &HashSet<u32>) -> u64 {
        pids.iter().map(|pid| self.since_of(before, *pid)).sum()
    }

    /// Ticks spent between `before` and `self` by the live process `pid` (0 if gone).
    pub fn since_of(&self, before: &ServiceTicks, pid: u32) -> u64 {
        self.live.get(&pid).map_or(0, |t| {
            t.saturating_sub(*before.live.get(&pid).unwrap_or(&0))
        })
    }
}

/// A `/proc/meminfo` entry (`MemTotal`, `Dirty`, …), in KiB.
pub fn meminfo_kib(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.split(':').next() == Some(key))?;
    line.split_once(':')?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Machine-wide CPU time from the `cpu` line of `/proc/stat`, in ticks.
#[derive(Debug, Clone, Copy, Default)]
pub struct MachineTicks {
    pub busy: u64,
    pub total: u64,
    /// Time the hypervisor ran something else while this machine wanted a CPU (part of
    /// `busy`): a figure taken under steal is taken on a slower machine.
    pub steal: u64,
}

impl MachineTicks {
    pub fn read() -> MachineTicks {
        let Ok(text) = std::fs::read_to_string("/proc/stat") else {
            return MachineTicks::default();
        };
        let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) else {
            return MachineTicks::default();
        };
        // user nice system idle iowait irq softirq steal (guest time is already in user).
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let total: u64 = v.iter().sum();
        let idle = v.get(3).unwrap_or(&0) + v.get(4).unwrap_or(&0);
        MachineTicks {
            busy: total - idle,
            total,
            steal: *v.get(7).unwrap_or(&0),
        }
    }
}
