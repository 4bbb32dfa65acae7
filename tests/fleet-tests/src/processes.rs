//! Workers as real processes, for crash tests: started from the workspace's built
//! binaries with the test fleet's database, namespace and simulator, logging JSON to a
//! file per process, and killed with real signals.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};

use crate::{eventually, TestFleet};

/// The directory holding the workspace's binaries (`target/debug` for `cargo test`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/debug/deps/<test> → target/debug
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target directory")
        .to_path_buf()
}

pub struct WorkerProcess {
    pub name: String,
    /// Shared with the fleet that started it, which ends it before removing the broker
    /// namespace (see [`TestFleet::end_processes`]).
    child: Arc<Mutex<Child>>,
    pub log: PathBuf,
}

/// The processes a fleet started, for ending those the test still holds.
pub(crate) type Started = Mutex<Vec<Weak<Mutex<Child>>>>;

fn end(child: &Mutex<Child>) {
    let mut child = child.lock().unwrap_or_else(|e| e.into_inner());
    let _ = child.kill();
    let _ = child.wait();
}

impl WorkerProcess {
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args([sig, &self.pid().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {sig} {}", self.pid());
    }

    /// SIGKILL, and reap it.
    pub fn kill9(&mut self) {
        self.signal("-KILL");
        let _ = self.child.lock().unwrap_or_else(|e| e.into_inner()).wait();
    }

    /// SIGTERM: a worker drains and exits.
    pub fn terminate(&self) {
        self.signal("-TERM");
    }

    /// The exit status, once the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .try_wait()
            .ok()
            .flatten()
    }

    pub fn pause(&self) {
        self.signal("-STOP");
    }

    pub fn resume(&self) {
        self.signal("-CONT");
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the process logged a line containing `needle`.
    pub async fn wait_for_log(&self, needle: &str) {
        eventually(&format!("{} to log {needle:?}", self.name), || async {
            self.log_text().contains(needle).then_some(())
        })
        .await;
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        end(&self.child);
    }
}

/// Two replicas of every worker that consumes or publishes (the API aside, which a test
/// starts with [`TestFleet::spawn_api`]): what the failover tests run, so that the loss of
/// any one process leaves its twin working.
pub const TWO_OF_EACH_WORKER: [&str; 8] = [
    "fleet-prepare",
    "fleet-prepare",
    "fleet-execute",
    "fleet-execute",
    "fleet-reconcile",
    "fleet-reconcile",
    "fleet-relay",
    "fleet-relay",
];

impl TestFleet {
    /// Ends every process this fleet started that is still running. Called before the
    /// namespace is removed: a worker whose queue is deleted under it reconnects and
    /// declares its queues again, which would leave them behind for good.
    pub(crate) fn end_processes(&self) {
        let started =
            std::mem::take(&mut *self.processes.lock().unwrap_or_else(|e| e.into_inner()));
        for child in started.iter().filter_map(Weak::upgrade) {
            end(&child);
        }
    }

    /// The database URL `binary` runs with: its component's own role, as in production
    /// (the test's own connections and `fleetctl` use the migrating owner's).
    pub fn database_url_of(&self, binary: &str) -> String {
        match fleet_store::DbRole::of_binary(binary) {
            Some(role) => fleet_store::role_url(
                &self.database_url,
                role,
                role.password_from_env().as_deref(),
            )
            .expect("the test database URL"),
            None => self.database_url.clone(),
        }
    }

    /// Starts `binary` (e.g. "fleet-execute") against this fleet, with extra settings.
    pub fn spawn_process(&self, binary: &str, env: &[(&str, &str)]) -> WorkerProcess {
        self.spawn_process_unsetting(binary, env, &[])
    }

    /// [`TestFleet::spawn_process`] without the settings named in `unset` (which the
    /// harness otherwise gives every process), to see what a binary does without them.
    pub fn spawn_process_unsetting(
        &self,
        binary: &str,
        env: &[(&str, &str)],
        unset: &[&str],
    ) -> WorkerProcess {
        let bin = bin_dir().join(binary);
        assert!(
            bin.exists(),
            "{} is missing: run the tests with `cargo test --workspace` so the binaries are built",
            bin.display()
        );
        let dir = bin_dir().join("test-logs").join(self.name());
        std::fs::create_dir_all(&dir).unwrap();
        let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        let log = dir.join(format!("{binary}-{n}.log"));
        let file = File::create(&log).unwrap();
        let mut command = Command::new(&bin);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", self.database_url_of(binary))
            .env("AMQP_URL", &self.broker.amqp_url)
            .env("AMQP_NAMESPACE", &self.broker.namespace)
            .env("PAYMENTS_URL", &self.sim.base_url)
            .env("CRM_URL", &self.sim.base_url)
            .env("ORDERS_URL", &self.sim.base_url)
            .env("ESIGN_URL", &self.sim.base_url)
            // The simulator commits every request before it answers unless a test injects a
            // delay; a test that does sets the matching bound itself.
            .env("PAYMENTS_MAX_REQUEST_S", "0")
            .env("CRM_MAX_REQUEST_S", "0")
            .env("ORDERS_MAX_REQUEST_S", "0")
            .env("ESIGN_MAX_REQUEST_S", "0")
            .env("ADMIN_ADDR", "127.0.0.1:0")
            .env("POLICY_DIR", crate::policy_dir())
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            // Tests publish intents as the shared broker user; those about the queue
            // door's identities set `refuse`.
            .env("PREPARE_ANONYMOUS_INTENTS", "allow")
            .envs(env.iter().copied());
        for key in unset {
            command.env_remove(key);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let child = Arc::new(Mutex::new(child));
        self.processes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(&child));
        WorkerProcess {
            name: binary.to_owned(),
            child,
            log,
        }
    }
}
