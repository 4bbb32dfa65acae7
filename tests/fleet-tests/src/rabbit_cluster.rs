//! A RabbitMQ cluster of its own for a failover test: three (or more) nodes started on
//! this machine with their own node names, ports, data directories and Erlang cookie, so
//! the machine's shared broker is never touched. A node is killed with SIGKILL (its whole
//! process group: the start script, the Erlang VM and its helpers) and started again on
//! its data directory, where it rejoins the cluster. A node that does not come up in time
//! is stopped and started once more before the test fails, and the failure shows the tail
//! of its logs. Dropping the cluster kills every node and removes the directory, on every
//! path, a failed start's included; when the test failed, every node's logs and the
//! cluster's own account of what it did (`cluster.log`: each start, its boot time, each
//! kill) are first copied to `target/test-logs/<cluster>/` and their tails printed.
//!
//! Every port of the cluster (each node's AMQP and distribution ports, and the range
//! `rabbitmqctl` takes its own distribution port from) lies below the ephemeral range
//! ([`fixed_port`]): a port picked free from the ephemeral range can be taken, while its
//! node is down between a kill and its restart, as the local end of any connection the
//! machine opens (the fleet reconnecting to everything at once opens many); the node then
//! fails to bind it, exits, and fails again on the same port. That is what once left a
//! node that never booted, its log gone with its directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use crate::fixed_port;

/// How long one node may take to boot (or to boot again after a kill) on a busy machine,
/// where two other builds may share its two cores.
const BOOT_DEADLINE: Duration = Duration::from_secs(180);

/// How long a killed node's process group may take to be gone, so that a new start finds
/// its ports and files free.
const STOP_DEADLINE: Duration = Duration::from_secs(10);

/// Lines of each of a node's logs quoted when it fails to start.
const LOG_TAIL_LINES: usize = 40;

/// RabbitMQ's own scripts, which run the server as the calling user (the packaged
/// wrappers in `/usr/sbin` switch to the system broker's user and home).
const RABBIT_BIN: &str = "/usr/lib/rabbitmq/bin";

struct Node {
    name: String,
    amqp_port: u16,
    dist_port: u16,
    dir: PathBuf,
    server: Option<Child>,
}

pub struct RabbitCluster {
    dir: PathBuf,
    nodes: Vec<Node>,
    /// The first of the ports `rabbitmqctl` may take for its own distribution (ten more
    /// follow it).
    ctl_dist_port: u16,
    /// How long each start of a node took until it ran: (node, what, seconds).
    boots: Vec<(usize, &'static str, f64)>,
    started: Instant,
}

impl RabbitCluster {
    /// Starts `size` nodes, joins them into one cluster and waits until every node runs.
    pub async fn start(size: usize) -> RabbitCluster {
        assert!(size >= 1);
        let id = ulid::Ulid::new().to_string().to_lowercase();
        let dir = std::env::temp_dir().join(format!("fleet-rabbit-{id}"));
        let host = short_hostname();
        let ports = free_ports(2 * size);
        let ctl_dist_port = fixed_port();
        let mut cluster = RabbitCluster {
            ctl_dist_port,
            boots: Vec::new(),
            started: Instant::now(),
            nodes: (0..size)
                .map(|i| Node {
                    name: format!("fleet-{}-{}@{host}", &id[id.len() - 8..], i + 1),
                    amqp_port: ports[2 * i],
                    dist_port: ports[2 * i + 1],
                    dir: dir.join(format!("n{}", i + 1)),
                    server: None,
                })
                .collect(),
            dir,
        };
        // From here on the cluster exists, so its drop removes whatever was made of it.
        std::fs::create_dir_all(&cluster.dir).expect("the cluster's directory");
        cluster.note(&format!(
            "cluster of {size} on {host}: ports (amqp, dist) {:?}, rabbitmqctl's from {ctl_dist_port}",
            cluster
                .nodes
                .iter()
                .map(|n| (n.amqp_port, n.dist_port))
                .collect::<Vec<_>>()
        ));
        // The cluster's own cookie, read by its nodes and by rabbitmqctl through HOME.
        let cookie = cluster.dir.join(".erlang.cookie");
        std::fs::write(&cookie, format!("FLEETTEST{id}").to_uppercase()).expect("the cookie");
        set_mode(&cookie, 0o400);
        // The nodes boot side by side; each is waited for (and started again if need be)
        // in turn.
        for i in 0..size {
            cluster.write_config(i);
            cluster.spawn(i);
        }
        let spawned = Instant::now();
        for i in 0..size {
            cluster.settle(i, Boot::Fresh, spawned).await;
        }
        let first = cluster.nodes[0].name.clone();
        for i in 1..size {
            let name = cluster.nodes[i].name.clone();
            cluster.ctl(&["-n", &name, "stop_app"]).await;
            cluster.ctl(&["-n", &name, "join_cluster", &first]).await;
            cluster.ctl(&["-n", &name, "start_app"]).await;
        }
        for i in 0..size {
            let joined = Instant::now();
            let result = cluster.await_startup(i).await;
            cluster.booted(i, "joined", joined, &result);
            if let Err(why) = result {
                panic!(
                    "node {} did not run again after joining the cluster: {why}\n{}",
                    cluster.nodes[i].name,
                    cluster.log_tail(i)
                );
            }
        }
        cluster
    }

    /// `AMQP_URL` for the whole cluster: every node's URL, comma-separated.
    pub fn amqp_url(&self) -> String {
        (0..self.nodes.len())
            .map(|i| self.node_url(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The URL of node `i` alone.
    pub fn node_url(&self, i: usize) -> String {
        format!(
            "amqp://guest:guest@127.0.0.1:{}/%2f",
            self.nodes[i].amqp_port
        )
    }

    pub fn size(&self) -> usize {
        self.nodes.len()
    }

    /// SIGKILL of node `i` (its process group), reaped, and waited for until the group is
    /// gone.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut server) = self.nodes[i].server.take() {
            kill_group(&server);
            let _ = server.wait();
            await_group_gone(&server);
            self.note(&format!("node {} killed", i + 1));
        }
    }

    /// Starts node `i` again on its data directory and waits until it runs in the cluster.
    pub async fn restart(&mut self, i: usize) {
        assert!(self.nodes[i].server.is_none(), "node {i} is running");
        let spawned = Instant::now();
        self.spawn(i);
        self.settle(i, Boot::Rejoin, spawned).await;
    }

    /// How long each start of a node took until it ran, in seconds, as
    /// `node<n>:<fresh|joined|rejoin>=<s>` (a second attempt's as `…-again`).
    pub fn boot_times(&self) -> Vec<String> {
        self.boots
            .iter()
            .map(|(i, what, s)| format!("node{}:{what}={s:.1}", i + 1))
            .collect()
    }

    /// The longest start of a node so far, in seconds.
    pub fn longest_boot_s(&self) -> f64 {
        self.boots.iter().map(|b| b.2).fold(0.0, f64::max)
    }

    /// Adds a line to the cluster's own log (`cluster.log`), kept with the nodes' logs
    /// when the test fails: what the test did to the cluster, and when.
    pub fn note(&self, line: &str) {
        use std::io::Write;
        if let Ok(mut log) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("cluster.log"))
        {
            let _ = writeln!(log, "{:>8.2}s {line}", self.started.elapsed().as_secs_f64());
        }
    }

    fn booted(
        &mut self,
        i: usize,
        what: &'static str,
        since: Instant,
        result: &Result<(), String>,
    ) {
        let s = since.elapsed().as_secs_f64();
        match result {
            Ok(()) => {
                self.boots.push((i, what, s));
                self.note(&format!("node {} running ({what}) after {s:.1}s", i + 1));
            }
            Err(why) => self.note(&format!(
                "node {} not running ({what}) after {s:.1}s: {why}",
                i + 1
            )),
        }
    }

    /// Waits until node `i`, just spawned, runs. A node that does not is stopped and
    /// started once more (a port taken between its choice and its bind, or a VM stalled on
    /// a loaded machine, rarely happens twice); a second failure fails the test with the
    /// tail of the node's logs from both attempts.
    async fn settle(&mut self, i: usize, boot: Boot, spawned: Instant) {
        let what = match boot {
            Boot::Fresh => "fresh",
            Boot::Rejoin => "rejoin",
        };
        let first_result = self.await_startup(i).await;
        self.booted(i, what, spawned, &first_result);
        let Err(first) = first_result else {
            return;
        };
        let first_tail = self.log_tail(i);
        // The first attempt's logs, kept whatever happens next.
        self.keep_logs(i, "attempt-1");
        self.kill(i);
        match boot {
            // Not yet in the cluster: nothing on its data directory is worth keeping (its
            // logs were kept above).
            Boot::Fresh => self.clean(i),
            // Its membership lives on its data directory; only the stale pid file goes.
            Boot::Rejoin => {
                let _ = std::fs::remove_file(self.nodes[i].dir.join("pid"));
            }
        }
        let again = Instant::now();
        self.spawn(i);
        let second = self.await_startup(i).await;
        let what = match boot {
            Boot::Fresh => "fresh-again",
            Boot::Rejoin => "rejoin-again",
        };
        self.booted(i, what, again, &second);
        if let Err(second) = second {
            panic!(
                "node {} did not start, twice.\nfirst attempt: {first}\n{first_tail}\n\
                 second attempt: {second}\n{}",
                self.nodes[i].name,
                self.log_tail(i)
            );
        }
    }

    /// Node `i` as new, before it joins the cluster: empty data and log directories and
    /// ports of its own again.
    fn clean(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let _ = std::fs::remove_dir_all(&node.dir);
        let ports = free_ports(2);
        node.amqp_port = ports[0];
        node.dist_port = ports[1];
        self.write_config(i);
    }

    /// Node `i`'s logs: its start script's output and the broker's own.
    fn logs_of(&self, i: usize) -> Vec<PathBuf> {
        let dir = &self.nodes[i].dir;
        let mut logs = vec![dir.join("server.log")];
        if let Ok(entries) = std::fs::read_dir(dir.join("log")) {
            let mut broker: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            broker.sort();
            logs.extend(broker);
        }
        logs
    }

    /// Where this cluster's logs are kept when its test fails: `target/test-logs/<dir>/`.
    fn kept_dir(&self) -> PathBuf {
        let target = crate::bin_dir();
        let target = target.parent().unwrap_or(&target);
        target
            .join("test-logs")
            .join(self.dir.file_name().unwrap_or_default())
    }

    /// Copies node `i`'s logs to `<kept>/n<i>/<attempt>/`.
    fn keep_logs(&self, i: usize, attempt: &str) -> PathBuf {
        let to = self.kept_dir().join(format!("n{}", i + 1)).join(attempt);
        let _ = std::fs::create_dir_all(&to);
        for log in self.logs_of(i) {
            if let Some(name) = log.file_name() {
                let _ = std::fs::copy(&log, to.join(name));
            }
        }
        to
    }

    /// The last lines of node `i`'s logs: its start script's output and the broker's own.
    fn log_tail(&self, i: usize) -> String {
        let mut tail = String::new();
        for log in self.logs_of(i) {
            let text = std::fs::read_to_string(&log).unwrap_or_else(|e| format!("({e})\n"));
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(LOG_TAIL_LINES);
            tail.push_str(&format!("--- {} ---\n", log.display()));
            if lines.is_empty() {
                tail.push_str("(empty)\n");
            }
            for line in &lines[from..] {
                tail.push_str(line);
                tail.push('\n');
            }
        }
        tail
    }

    /// The members of every queue whose name starts with `prefix`, as the cluster reports
    /// them (`name` and its member nodes' count).
    pub async fn quorum_members(&self, prefix: &str) -> Vec<(String, usize)> {
        self.list_queues("members")
            .await
            .iter()
            .filter(|q| q["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .map(|q| {
                let members = q["members"].as_array().map_or(0, Vec::len);
                (q["name"].as_str().unwrap_or_default().to_owned(), members)
            })
            .collect()
    }

    /// The index of the node leading each queue whose name starts with `prefix` (where
    /// its writes are ordered), by queue name.
    pub async fn leaders(&self, prefix: &str) -> std::collections::BTreeMap<String, usize> {
        self.list_queues("leader")
            .await
            .iter()
            .filter_map(|q| {
                let name = q["name"].as_str().filter(|n| n.starts_with(prefix))?;
                let leader = q["leader"].as_str()?;
                let node = self.nodes.iter().position(|n| n.name == leader)?;
                Some((name.to_owned(), node))
            })
            .collect()
    }

    /// Every queue's `name` and `column`, as a running node reports them.
    async fn list_queues(&self, column: &str) -> Vec<serde_json::Value> {
        let node = self.running_node();
        let args = [
            "-n",
            &node,
            "list_queues",
            "name",
            column,
            "--formatter",
            "json",
        ];
        let out = self.ctl(&args).await;
        match serde_json::from_str(&out).expect("list_queues answers json") {
            serde_json::Value::Array(queues) => queues,
            other => panic!("list_queues answered {other}"),
        }
    }

    fn running_node(&self) -> String {
        self.nodes
            .iter()
            .find(|n| n.server.is_some())
            .expect("a running node")
            .name
            .clone()
    }

    fn write_config(&self, i: usize) {
        let node = &self.nodes[i];
        std::fs::create_dir_all(&node.dir).expect("a node's directory");
        std::fs::write(node.dir.join("enabled_plugins"), "[].\n").expect("enabled_plugins");
        std::fs::write(
            node.dir.join("rabbitmq.conf"),
            format!("listeners.tcp.default = 127.0.0.1:{}\n", node.amqp_port),
        )
        .expect("rabbitmq.conf");
    }

    fn spawn(&mut self, i: usize) {
        let home = self.dir.clone();
        let node = &mut self.nodes[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.dir.join("server.log"))
            .expect("the node's log");
        let mut command = Command::new(rabbit_bin("rabbitmq-server"));
        // The VM writes its crash dumps (erl_crash.dump, MnesiaCore.*) into its working
        // directory; the node's own, so that nothing lands in the caller's checkout.
        command
            .current_dir(&node.dir)
            .env("HOME", &home)
            .env("RABBITMQ_NODENAME", &node.name)
            .env("RABBITMQ_DIST_PORT", node.dist_port.to_string())
            .env("RABBITMQ_CONFIG_FILE", node.dir.join("rabbitmq.conf"))
            .env("RABBITMQ_MNESIA_BASE", node.dir.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", node.dir.join("log"))
            .env(
                "RABBITMQ_ENABLED_PLUGINS_FILE",
                node.dir.join("enabled_plugins"),
            )
            .env("RABBITMQ_PID_FILE", node.dir.join("pid"))
            // The cookie in HOME, not a variable of the machine's broker.
            .env_remove("RABBITMQ_ERLANG_COOKIE")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        // Its own process group, so that a kill reaches the VM and its helpers too.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        node.server = Some(command.spawn().unwrap_or_else(|e| {
            panic!("starting rabbitmq-server ({RABBIT_BIN}): {e}; is RabbitMQ installed?")
        }));
    }

    /// Waits until node `i` runs; why not, if its server exits or the deadline passes.
    async fn await_startup(&mut self, i: usize) -> Result<(), String> {
        let deadline = Instant::now() + BOOT_DEADLINE;
        let name = self.nodes[i].name.clone();
        loop {
            let ready = self
                .ctl_status(&["-n", &name, "await_startup", "--timeout", "5"])
                .await;
            if ready {
                return Ok(());
            }
            let server = self.nodes[i].server.as_mut().expect("a spawned node");
            if let Ok(Some(status)) = server.try_wait() {
                // Reaped here; the group's helpers go with the next kill.
                return Err(format!("rabbitmq-server exited ({status})"));
            }
            if Instant::now() >= deadline {
                return Err(format!("not running within {BOOT_DEADLINE:?}"));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Runs rabbitmqctl against the cluster; its output, or a panic naming the failure.
    async fn ctl(&self, args: &[&str]) -> String {
        let out = self.ctl_command(args).output().await.expect("rabbitmqctl");
        assert!(
            out.status.success(),
            "rabbitmqctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    async fn ctl_status(&self, args: &[&str]) -> bool {
        self.ctl_command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .is_ok_and(|s| s.success())
    }

    fn ctl_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(rabbit_bin("rabbitmqctl"));
        command
            .current_dir(&self.dir)
            .env("HOME", &self.dir)
            // Its own distribution port from the cluster's range, below the ephemeral
            // range like every port of the cluster (by default 35672–35682, inside it).
            .env("RABBITMQ_CTL_DIST_PORT_MIN", self.ctl_dist_port.to_string())
            .env(
                "RABBITMQ_CTL_DIST_PORT_MAX",
                (self.ctl_dist_port + 10).to_string(),
            )
            .args(args)
            .kill_on_drop(true);
        command
    }
}

impl Drop for RabbitCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        if std::thread::panicking() {
            // The test failed: every node's logs and the cluster's own go where CI keeps
            // them, and their tails to the test's output.
            let kept = self.kept_dir();
            let _ = std::fs::create_dir_all(&kept);
            let _ = std::fs::copy(self.dir.join("cluster.log"), kept.join("cluster.log"));
            let mut report = format!(
                "--- {} ---\n{}",
                kept.join("cluster.log").display(),
                std::fs::read_to_string(self.dir.join("cluster.log")).unwrap_or_default()
            );
            for i in 0..self.nodes.len() {
                self.keep_logs(i, "last");
                report.push_str(&self.log_tail(i));
            }
            eprintln!("rabbit cluster logs kept in {}\n{report}", kept.display());
        }
        // A helper of the VM still exiting may write a file while the tree goes; once more.
        for _ in 0..3 {
            if std::fs::remove_dir_all(&self.dir).is_ok() || !self.dir.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// How a node is started: new, before it joins the cluster, or again on its data
/// directory as a member.
#[derive(Clone, Copy)]
enum Boot {
    Fresh,
    Rejoin,
}

fn rabbit_bin(name: &str) -> PathBuf {
    let packaged = Path::new(RABBIT_BIN).join(name);
    if packaged.exists() {
        packaged
    } else {
        PathBuf::from(name)
    }
}

fn kill_group(child: &Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
}

/// Waits (a short while at most) until no process of `child`'s group is left.
fn await_group_gone(child: &Child) {
    let deadline = std::time::Instant::now() + STOP_DEADLINE;
    while std::time::Instant::now() < deadline {
        let alive = Command::new("kill")
            .args(["-0", "--", &format!("-{}", child.id())])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The host part of a short Erlang node name, as RabbitMQ's scripts derive it.
fn short_hostname() -> String {
    let out = Command::new("hostname")
        .arg("-s")
        .output()
        .expect("hostname -s");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `n` ports free at this moment, below the ephemeral range (see the module's
/// documentation), never given twice.
fn free_ports(n: usize) -> Vec<u16> {
    (0..n).map(|_| fixed_port()).collect()
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
