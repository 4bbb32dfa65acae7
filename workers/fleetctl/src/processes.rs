//! Child processes started by `fleetctl demo` and `fleet-bench`: the provider simulator
//! and the worker binaries, each a real process with its own log file, stopped with
//! SIGTERM (the workers drain in-flight work) and killed if they linger or if fleetctl
//! itself fails (`kill_on_drop`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::process::{Child, Command};
use tokio::time::{sleep, Instant};

pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
pub const STOP_TIMEOUT: Duration = Duration::from_secs(15);
const READY_POLL: Duration = Duration::from_millis(100);

/// One started binary. `name` is what logs and reports call it (e.g. `fleet-execute#1`).
pub struct Proc {
    pub name: String,
    child: Child,
}

impl Proc {
    /// The OS process id, while the process has not been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

/// `explicit`, or the directory fleetctl itself runs from (the binaries are built together).
pub fn bin_dir(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    match explicit {
        Some(dir) => Ok(dir.to_path_buf()),
        None => Ok(std::env::current_exe()?
            .parent()
            .context("fleetctl has no parent directory")?
            .to_path_buf()),
    }
}

/// Starts `bin_dir/bin` with `envs` on top of fleetctl's environment; stdout and stderr go
/// to `log_dir/<name>.log`.
pub fn spawn(
    bin_dir: &Path,
    log_dir: &Path,
    bin: &str,
    name: &str,
    envs: &[(&str, &str)],
) -> anyhow::Result<Proc> {
    let path = bin_dir.join(bin);
    anyhow::ensure!(
        path.exists(),
        "{} is missing: build every binary first (cargo build --release --workspace --bins)",
        path.display()
    );
    std::fs::create_dir_all(log_dir)?;
    let log = File::create(log_dir.join(format!("{name}.log")))?;
    let mut cmd = Command::new(&path);
    cmd.envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", path.display()))?;
    Ok(Proc {
        name: name.to_owned(),
        child,
    })
}

/// Polls `url` until it answers 2xx, or fails after [`READY_TIMEOUT`].
pub async fn wait_http_ok(client: &reqwest::Client, url: &str, what: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(r) = client.get(url).send().await {
            if r.status().is_success() {
                return Ok(());
            }
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{what} did not become ready at {url} within {READY_TIMEOUT:?}; see its log"
        );
        sleep(READY_POLL).await;
    }
}

/// SIGTERM every process (workers drain in-flight work), then wait; kill stragglers.
pub async fn stop_all(procs: &mut [Proc]) {
    for p in procs.iter() {
        if let Some(pid) = p.pid() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }
    for p in procs.iter_mut() {
        match tokio::time::timeout(STOP_TIMEOUT, p.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => eprintln!("{} exited with {status}", p.name),
            Ok(Err(e)) => eprintln!("{}: {e}", p.name),
            Err(_) => {
                eprintln!(
                    "{} did not stop within {STOP_TIMEOUT:?}; killing it",
                    p.name
                );
                let _ = p.child.kill().await;
            }
        }
    }
}

/// The database URL the component `binary` runs with: the operator's URL with the
/// component's role as user, and its password when `FLEET_DB_PASSWORD_<COMPONENT>` is set
/// (the same setting `fleetctl migrate` reads to set it).
pub fn component_database_url(operator_url: &str, binary: &str) -> anyhow::Result<String> {
    let role = fleet_store::DbRole::of_binary(binary)
        .ok_or_else(|| anyhow::anyhow!("{binary} has no database role"))?;
    Ok(fleet_store::role_url(
        operator_url,
        role,
        role.password_from_env().as_deref(),
    )?)
}
