//! The demo's processes: the provider simulator and the four workers, each a real
//! process with its own log file, stopped with SIGTERM (drain) at the end and killed if
//! the demo itself fails.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use fleet_runtime::admin_addrs;
use tokio::process::{Child, Command};
use tokio::time::{sleep, Instant};

use crate::cli::Connection;

const READY_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

pub struct Fleet {
    children: Vec<(&'static str, Child)>,
    sim_url: String,
}

fn spawn(bin_dir: &Path, log_dir: &Path, name: &'static str, envs: &[(&str, &str)]) -> anyhow::Result<Child> {
    let bin: PathBuf = bin_dir.join(name);
    anyhow::ensure!(bin.exists(), "{} is missing: build every binary first (cargo build --release --workspace --bins)", bin.display());
    let log = File::create(log_dir.join(format!("{name}.log")))?;
    let mut cmd = Command::new(&bin);
    cmd.envs(envs.iter().copied()).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).kill_on_drop(true);
    cmd.spawn().with_context(|| format!("starting {}", bin.display()))
}

async fn wait_http_ok(client: &reqwest::Client, url: &str, what: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(r) = client.get(url).send().await {
            if r.status().is_success() {
                return Ok(());
            }
        }
        anyhow::ensure!(Instant::now() < deadline, "{what} did not become ready at {url} within {READY_TIMEOUT:?}; see its log");
        sleep(Duration::from_millis(100)).await;
    }
}

impl Fleet {
    pub async fn start(bin_dir: &Path, log_dir: &Path, conn: &Connection, sim_addr: &str) -> anyhow::Result<Fleet> {
        std::fs::create_dir_all(log_dir)?;
        let client = reqwest::Client::new();
        let sim_url = format!("http://{sim_addr}");
        let mut children = vec![("fleet-provider-sim", spawn(bin_dir, log_dir, "fleet-provider-sim", &[("SIM_ADDR", sim_addr)])?)];
        wait_http_ok(&client, &format!("{sim_url}/_sim/effects"), "the provider simulator").await?;
        let envs = [
            ("DATABASE_URL", conn.database_url.expose()),
            ("AMQP_URL", conn.amqp_url.expose()),
            ("AMQP_NAMESPACE", conn.amqp_namespace.as_str()),
            ("PAYMENTS_URL", sim_url.as_str()),
            ("LOG_FORMAT", "json"),
        ];
        let workers = [
            ("fleet-prepare", admin_addrs::PREPARE),
            ("fleet-execute", admin_addrs::EXECUTE),
            ("fleet-reconcile", admin_addrs::RECONCILE),
            ("fleet-webhook-ingest", admin_addrs::WEBHOOK_INGEST),
        ];
        for (name, _) in workers {
            children.push((name, spawn(bin_dir, log_dir, name, &envs)?));
        }
        let fleet = Fleet { children, sim_url };
        for (name, admin) in workers {
            wait_http_ok(&client, &format!("http://{admin}/readyz"), name).await?;
        }
        println!("started the provider simulator and {} workers", workers.len());
        Ok(fleet)
    }

    pub fn sim_url(&self) -> &str {
        &self.sim_url
    }

    /// SIGTERM every process (workers drain in-flight work), then wait; kill stragglers.
    pub async fn stop(&mut self) {
        for (_, child) in &self.children {
            if let Some(pid) = child.id() {
                let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
            }
        }
        for (name, child) in &mut self.children {
            match tokio::time::timeout(STOP_TIMEOUT, child.wait()).await {
                Ok(Ok(status)) if status.success() => {}
                Ok(Ok(status)) => eprintln!("{name} exited with {status}"),
                Ok(Err(e)) => eprintln!("{name}: {e}"),
                Err(_) => {
                    eprintln!("{name} did not stop within {STOP_TIMEOUT:?}; killing it");
                    let _ = child.kill().await;
                }
            }
        }
    }
}
