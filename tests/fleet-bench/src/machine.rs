//! The machine a figure was measured on: it goes into every report, because a number
//! without its machine means nothing.

use std::collections::BTreeMap;

use serde::Serialize;

use super::calibrate::{self, Calibration, SpeedDuringWindow};
use super::database::BenchDb;

/// The server settings that move the figures: what each session may run (JIT), what a
/// commit waits for (synchronous commit, fsync, WAL), what runs beside the load
/// (autovacuum) and what the server preloads (`pg_stat_statements`).
pub const POSTGRES_SETTINGS: [&str; 16] = [
    "autovacuum",
    "checkpoint_timeout",
    "commit_delay",
    "effective_io_concurrency",
    "fsync",
    "full_page_writes",
    "jit",
    "max_connections",
    "max_wal_size",
    "shared_buffers",
    "shared_preload_libraries",
    "synchronous_commit",
    "wal_buffers",
    "wal_compression",
    "wal_level",
    "wal_sync_method",
];

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_gib: f64,
    pub kernel: String,
    /// 1-minute load average when the run started (other work on a shared machine).
    pub load_1m_at_start: f64,
    pub postgres: String,
    /// [`POSTGRES_SETTINGS`] as the server reports them (with their units).
    pub postgres_settings: BTreeMap<String, String>,
    /// The probe run just before the measurement.
    pub calibration: Option<Calibration>,
    /// The core's speed sampled during the measured window (a host that slowed down
    /// during a run shows here, not in the steal time).
    pub speed_during_window: Option<SpeedDuringWindow>,
}

fn first_value(text: &str, key: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    Some(line.split_once(':')?.1.trim().to_owned())
}

impl Machine {
    pub fn read(postgres: String) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let mem_kib = super::procfs::meminfo_kib("MemTotal").unwrap_or(0) as f64;
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
            postgres_settings: BTreeMap::new(),
            calibration: None,
            speed_during_window: None,
        }
    }

    /// The machine, the server's settings, and a calibration probe against `db`, run now
    /// (before the measurement, with nothing of the bench running yet).
    pub async fn measure(db: &BenchDb) -> anyhow::Result<Machine> {
        let machine = Machine::read(db.server_version().await?);
        let settings = db.server_settings(&POSTGRES_SETTINGS).await?;
        let calibration = calibrate::probe(&db.sql(1)?).await?;
        Ok(machine.with_environment(settings, calibration))
    }

    /// The calibration probe's line, if it ran.
    pub fn calibration_line(&self) -> Option<String> {
        self.calibration.as_ref().map(Calibration::line)
    }

    /// The in-window speed samples' line, if there are any.
    pub fn speed_line(&self) -> Option<String> {
        self.speed_during_window
            .as_ref()
            .map(SpeedDuringWindow::line)
    }

    /// The core's speed during the window, beside the calibration's.
    pub fn with_window_speed(mut self, speed: Option<SpeedDuringWindow>) -> Machine {
        self.speed_during_window = speed.map(|s| s.against(self.calibration.as_ref()));
        self
    }

    /// The server's settings and the calibration probe, as measured for this run.
    pub fn with_environment(
        mut self,
        postgres_settings: BTreeMap<String, String>,
        calibration: Calibration,
    ) -> Machine {
        self.postgres_settings = postgres_settings;
        self.calibration = Some(calibration);
        self
    }

    /// The settings that move the figures, on one line.
    pub fn settings_line(&self) -> String {
        let pick = |k: &str| {
            self.postgres_settings
                .get(k)
                .map_or("?", String::as_str)
                .to_owned()
        };
        let preload = pick("shared_preload_libraries");
        format!(
            "postgres server: jit {} (the fleet's sessions: off), autovacuum {}, synchronous_commit {}, fsync {}, shared_buffers {}, wal_level {}, preloaded [{}]",
            pick("jit"),
            pick("autovacuum"),
            pick("synchronous_commit"),
            pick("fsync"),
            pick("shared_buffers"),
            pick("wal_level"),
            preload
        )
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
