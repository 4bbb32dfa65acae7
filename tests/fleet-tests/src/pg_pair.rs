//! A Postgres primary and one synchronous standby of its own, for failover tests: two
//! servers of the machine's Postgres binaries on free ports of 127.0.0.1, their data
//! directories and sockets in a temporary directory. The primary commits only once the
//! standby has the commit (`synchronous_commit = on`, `synchronous_standby_names` naming
//! it), so a commit acknowledged before the primary dies is on the standby when it is
//! promoted. The test fails the primary ([`PgFault`]: killed, frozen, or silent behind a
//! proxy that swallows its traffic) and promotes the standby; dropping the pair stops every
//! server process and removes the directory, on every path.
//!
//! Run as root, the servers run as the `postgres` user (Postgres refuses to run as root),
//! their directory owned by it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use crate::{eventually_within, free_port, Infra};

/// The standby's `application_name`, which the primary's `synchronous_standby_names`
/// names.
const STANDBY_NAME: &str = "fleet_standby";

/// How long starting a server, the standby catching up, or a promotion may take.
const SERVER_DEADLINE: Duration = Duration::from_secs(60);

/// One server of the pair.
struct Server {
    data: PathBuf,
    port: u16,
    log: PathBuf,
    /// The postmaster, a child of this process; `None` once it was killed.
    postmaster: Option<Child>,
}

/// How the primary fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgFault {
    /// SIGKILL of every process of the server: its connections close at once, as a
    /// crashed server's do (its machine's kernel still answers for them).
    Killed,
    /// SIGSTOP of every process of the server: a stalled machine or VM. Its kernel still
    /// accepts connections and acknowledges every byte, and nothing ever answers.
    Frozen,
    /// Its address black-holed: the test's proxy in front of it forwards nothing more and
    /// closes nothing, as a partition or a dropped route looks to a client.
    BlackHoled,
}

/// A primary with a synchronous standby; see the module's documentation.
pub struct PgPair {
    dir: PathBuf,
    /// In front of the primary for the clients, when the pair was started for
    /// [`PgFault::BlackHoled`] (the standby streams from the primary directly).
    proxy: Option<std::sync::Arc<crate::SilentProxy>>,
    /// Set once the primary's processes were ended and reaped: its pid may be another
    /// process's by now, which a [`Fencer`] must not signal.
    primary_gone: std::sync::Arc<std::sync::atomic::AtomicBool>,
    bin: PathBuf,
    /// The user the servers run as, when this process runs as root.
    run_as: Option<(u32, u32)>,
    primary: Server,
    standby: Server,
}

impl PgPair {
    /// Starts the primary, makes the standby from a base backup of it, and waits until the
    /// standby streams and is synchronous.
    pub async fn start() -> PgPair {
        Self::start_for(PgFault::Killed).await
    }

    /// [`PgPair::start`] ready for `fault`: with the proxy in front of the primary for
    /// [`PgFault::BlackHoled`].
    pub async fn start_for(fault: PgFault) -> PgPair {
        let bin = pg_bin_dir();
        let run_as = server_user();
        let dir = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}",
            ulid::Ulid::new().to_string().to_lowercase()
        ));
        remove_leftovers();
        std::fs::create_dir(&dir).expect("the pair's directory");
        std::fs::write(dir.join(OWNER_FILE), std::process::id().to_string())
            .expect("the pair's owner file");
        let server = |name: &str| Server {
            data: dir.join(name),
            port: free_port(),
            log: dir.join(format!("{name}.log")),
            postmaster: None,
        };
        // Built before anything is started, so that a failure below still removes
        // whatever was started (Drop).
        let mut pair = PgPair {
            primary: server("primary"),
            standby: server("standby"),
            dir,
            bin,
            run_as,
            proxy: None,
            primary_gone: Default::default(),
        };
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&pair.dir, Some(uid), Some(gid)).expect("chown the pair");
        }
        pair.run(
            "initdb",
            &[
                "-D".as_ref(),
                pair.primary.data.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "--auth=trust".as_ref(),
                "--encoding=UTF8".as_ref(),
                "--locale=C".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        append(
            &pair.primary.data.join("postgresql.conf"),
            &format!(
                "{}wal_level = replica\nmax_wal_senders = 4\nsynchronous_commit = on\nsynchronous_standby_names = '{STANDBY_NAME}'\n",
                pair.common_settings(pair.primary.port),
            ),
        );
        pair.primary.postmaster = Some(pair.postmaster(&pair.primary));
        pair.wait_accepting(pair.primary.port, "the primary to accept connections")
            .await;
        let conninfo = format!(
            "host=127.0.0.1 port={} user=postgres application_name={STANDBY_NAME}",
            pair.primary.port
        );
        pair.run(
            "pg_basebackup",
            &[
                "-D".as_ref(),
                pair.standby.data.as_os_str(),
                "-d".as_ref(),
                conninfo.as_ref(),
                // standby.signal and primary_conninfo (with the application name above).
                "-R".as_ref(),
                "-X".as_ref(),
                "stream".as_ref(),
                "--checkpoint=fast".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        // The copied configuration names the primary's port and its standby. Once
        // promoted, the standby must not wait for a standby of its own that does not
        // exist: with `synchronous_standby_names` still set, every commit on it would
        // hang, and the fleet would never resume.
        append(
            &pair.standby.data.join("postgresql.conf"),
            &format!(
                "{}synchronous_standby_names = ''\n",
                pair.common_settings(pair.standby.port)
            ),
        );
        pair.standby.postmaster = Some(pair.postmaster(&pair.standby));
        pair.wait_accepting(pair.standby.port, "the standby to accept connections")
            .await;
        let primary = pair.primary_url();
        eventually_within(
            SERVER_DEADLINE,
            "the standby to stream synchronously",
            || async {
                let client = connect(&primary).await?;
                let row = client
                    .query_opt(
                        "SELECT FROM pg_stat_replication
                          WHERE application_name = $1 AND state = 'streaming' AND sync_state = 'sync'",
                        &[&STANDBY_NAME],
                    )
                    .await
                    .ok()?;
                row.map(|_| ())
            },
        )
        .await;
        if fault == PgFault::BlackHoled {
            pair.proxy = Some(std::sync::Arc::new(
                crate::SilentProxy::start(pair.primary.port).await,
            ));
        }
        pair
    }

    /// What both servers are configured with, on `port`. `fsync = off`: the tests kill
    /// processes, never the machine, so the page cache survives every kill and nothing
    /// acknowledged depends on a disk flush; the commits the pair protects are those the
    /// standby received before the primary's death, as synchronous replication promises.
    fn common_settings(&self, port: u16) -> String {
        format!(
            "\n# fleet-tests pg_pair\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\nmax_connections = 200\nshared_buffers = 32MB\nfsync = off\n",
            self.dir.display()
        )
    }

    /// The primary's server URL (no database).
    pub fn primary_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}", self.primary.port)
    }

    /// The standby's server URL (no database).
    pub fn standby_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}", self.standby.port)
    }

    /// Both servers in one URL, as a deployment gives its workers: a client connects to
    /// whichever accepts writes (`postgres://…@P1,P2?target_session_attrs=read-write`;
    /// [`database_url_at`](crate::database_url_at) puts a database in it). With a connect
    /// timeout, so that the harness's own connections (which set none) never wait on a
    /// server that does not answer.
    pub fn url(&self) -> String {
        let primary = self.proxy.as_ref().map_or(self.primary.port, |p| p.port());
        format!(
            "postgres://postgres@127.0.0.1:{primary},127.0.0.1:{}?target_session_attrs=read-write&connect_timeout=5",
            self.standby.port
        )
    }

    /// A fleet's servers on this pair (the harness and the workers given [`PgPair::url`])
    /// and the broker at `amqp_url`.
    pub fn infra(&self, amqp_url: String) -> Infra {
        Infra {
            database_base_url: self.url(),
            amqp_url,
        }
    }

    /// SIGKILLs the primary's postmaster and every process it started, at once, as a
    /// machine that died would leave them: no shutdown, no last word to a client. Returns
    /// the moment of the kill.
    pub fn kill_primary(&mut self) -> Instant {
        let postmaster = self
            .primary
            .postmaster
            .take()
            .expect("the primary is running");
        let at = Instant::now();
        kill_server(postmaster);
        self.primary_gone
            .store(true, std::sync::atomic::Ordering::SeqCst);
        at
    }

    /// Fails the primary as `fault` says; returns the moment it failed.
    pub fn fail_primary(&mut self, fault: PgFault) -> Instant {
        match fault {
            PgFault::Killed => self.kill_primary(),
            PgFault::Frozen => {
                let pid = self
                    .primary
                    .postmaster
                    .as_ref()
                    .expect("the primary is running")
                    .id();
                let at = Instant::now();
                // The postmaster first, so that it starts no process meanwhile.
                signal("-STOP", &[pid]);
                signal("-STOP", &children_of(pid));
                at
            }
            PgFault::BlackHoled => {
                let at = Instant::now();
                self.proxy
                    .as_ref()
                    .expect("a pair started for PgFault::BlackHoled")
                    .swallow();
                at
            }
        }
    }

    /// Fences the old primary, as a failover manager does once the standby took over: its
    /// processes end (stopped ones included) and its address refuses connections, so that
    /// no client waits on it any more.
    pub fn fence_primary(&mut self) {
        if let Some(proxy) = &self.proxy {
            proxy.close();
        }
        if let Some(postmaster) = self.primary.postmaster.take() {
            kill_server(postmaster);
        }
        self.primary_gone
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// A guard that fences the primary when dropped ([`PgPair::fence_primary`]'s effect:
    /// its processes killed, its proxy closed), for a test to declare after its fleet, so
    /// that on every path the primary is gone before the fleet's clean-up, which like every
    /// client would wait on a frozen or silent server.
    pub fn fencer(&self) -> Fencer {
        Fencer {
            postmaster: self.primary.postmaster.as_ref().map(Child::id),
            proxy: self.proxy.clone(),
            gone: self.primary_gone.clone(),
        }
    }

    /// Promotes the standby (`pg_ctl promote`) and waits until it accepts writes.
    pub async fn promote_standby(&self) {
        self.run(
            "pg_ctl",
            &[
                "promote".as_ref(),
                "-D".as_ref(),
                self.standby.data.as_os_str(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
            ],
        );
        let standby = self.standby_url();
        eventually_within(
            SERVER_DEADLINE,
            "the promoted standby to take writes",
            || async {
                let client = connect(&standby).await?;
                // A transaction id is assigned only where writes are allowed, and its commit
                // returns only if no synchronous standby is waited for.
                client
                    .simple_query("SET statement_timeout = '2s'; SELECT txid_current()")
                    .await
                    .ok()
                    .map(|_| ())
            },
        )
        .await;
    }

    /// The servers' logs, for a failing test's message.
    pub fn logs(&self) -> String {
        [&self.primary.log, &self.standby.log]
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Runs one of the Postgres tools to completion, as the servers' user; it must
    /// succeed.
    fn run(&self, tool: &str, args: &[&std::ffi::OsStr]) {
        let output = self
            .command(tool)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {tool}: {e}"));
        assert!(
            output.status.success(),
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn command(&self, tool: &str) -> Command {
        let mut command = Command::new(self.bin.join(tool));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("LC_ALL", "C")
            .current_dir(&self.dir);
        if let Some((uid, gid)) = self.run_as {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        command
    }

    /// Starts the postmaster of `server` as a child of this process (so that killing it
    /// is a signal to the postmaster itself), logging to its file.
    fn postmaster(&self, server: &Server) -> Child {
        let log = std::fs::File::create(&server.log).expect("the server's log");
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(&server.log, Some(uid), Some(gid)).expect("chown the log");
        }
        self.command("postgres")
            .arg("-D")
            .arg(&server.data)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log"))
            .stderr(log)
            .spawn()
            .expect("starting postgres")
    }

    async fn wait_accepting(&self, port: u16, what: &str) {
        let url = format!("postgres://postgres@127.0.0.1:{port}");
        eventually_within(SERVER_DEADLINE, what, || async {
            connect(&url).await.map(|_| ())
        })
        .await;
    }
}

impl Drop for PgPair {
    /// Every server process ends (SIGKILL: the data is thrown away) and the directory is
    /// removed, whether the test passed or not.
    fn drop(&mut self) {
        self.fence_primary();
        for server in [&mut self.primary, &mut self.standby] {
            if let Some(postmaster) = server.postmaster.take() {
                kill_server(postmaster);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// See [`PgPair::fencer`].
pub struct Fencer {
    postmaster: Option<u32>,
    proxy: Option<std::sync::Arc<crate::SilentProxy>>,
    gone: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Fencer {
    fn drop(&mut self) {
        if let Some(proxy) = &self.proxy {
            proxy.close();
        }
        // The postmaster stays the pair's child, reaped by the pair; a stopped process
        // ends on SIGKILL all the same.
        // Not yet reaped (the pair reaps it only when it fences or drops), so the pid is
        // still the postmaster's.
        let gone = self.gone.load(std::sync::atomic::Ordering::SeqCst);
        if let Some(pid) = self.postmaster.filter(|_| !gone) {
            signal("-STOP", &[pid]);
            signal("-KILL", &children_of(pid));
            signal("-KILL", &[pid]);
        }
    }
}

/// The file of a pair's directory naming the test process that started it.
const OWNER_FILE: &str = "owner.pid";
const DIR_PREFIX: &str = "fleet-pg-";

/// Ends the servers and removes the directories of pairs whose test process is gone (a run
/// killed before any `Drop` could run): nothing of an earlier run outlives the next.
fn remove_leftovers() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for dir in entries.filter_map(|e| Some(e.ok()?.path())) {
        let ours = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(DIR_PREFIX));
        let owner: Option<u32> = std::fs::read_to_string(dir.join(OWNER_FILE))
            .ok()
            .and_then(|p| p.trim().parse().ok());
        if !ours || owner.is_none_or(alive) {
            continue;
        }
        for data in ["primary", "standby"].map(|name| dir.join(name)) {
            let pid: Option<u32> = std::fs::read_to_string(data.join("postmaster.pid"))
                .ok()
                .and_then(|f| f.lines().next()?.trim().parse().ok());
            // Only a postmaster of that very directory (a pid may have been reused).
            let runs_there = |pid: u32| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&*data.to_string_lossy()))
            };
            if let Some(pid) = pid.filter(|&p| runs_there(p)) {
                signal("-STOP", &[pid]);
                signal("-KILL", &children_of(pid));
                signal("-KILL", &[pid]);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// SIGKILLs a postmaster and every process it started, and waits until they are gone.
/// The postmaster is stopped first (SIGSTOP), so that it starts no process between the
/// listing of its children and their end.
fn kill_server(mut postmaster: Child) {
    let pid = postmaster.id();
    signal("-STOP", &[pid]);
    let children = children_of(pid);
    signal("-KILL", &children);
    let _ = postmaster.kill();
    let _ = postmaster.wait();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while children.iter().any(|&c| alive(c)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(sig: &str, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg(sig)
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

/// The processes whose parent is `pid` (`/proc/<pid>/stat`'s fourth field).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| stat_of(p).is_some_and(|(_, ppid)| ppid == pid))
        .collect()
}

/// Whether `pid` runs (a zombie waiting for its new parent to reap it has ended).
fn alive(pid: u32) -> bool {
    stat_of(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// The state and parent of a process, from `/proc/<pid>/stat` (`pid (comm) state ppid …`,
/// the command name possibly holding spaces and parentheses).
fn stat_of(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Where the Postgres server binaries are: `PG_BIN_DIR`, or the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout).
fn pg_bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PG_BIN_DIR") {
        return dir.into();
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let version: u32 = e.as_ref().ok()?.file_name().to_str()?.parse().ok()?;
            Some((version, e.ok()?.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").exists())
        .max_by_key(|(version, _)| *version);
    newest.map(|(_, bin)| bin).expect(
        "no Postgres server binaries: set PG_BIN_DIR or install them under /usr/lib/postgresql",
    )
}

/// `Some((uid, gid))` of the `postgres` user when this process runs as root (the servers
/// must not), `None` otherwise (they run as this process's user).
fn server_user() -> Option<(u32, u32)> {
    let id = |args: &[&str]| -> Option<u32> {
        let out = Command::new("id").args(args).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    if id(&["-u"])? != 0 {
        return None;
    }
    Some((
        id(&["-u", "postgres"]).expect("a postgres user to run the servers as"),
        id(&["-g", "postgres"]).expect("the postgres user's group"),
    ))
}

/// A connection to the `postgres` database of the server at `server_url`, if it answers.
async fn connect(server_url: &str) -> Option<tokio_postgres::Client> {
    let mut config: tokio_postgres::Config = format!("{server_url}/postgres").parse().ok()?;
    config.connect_timeout(Duration::from_secs(2));
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.ok()?;
    tokio::spawn(connection);
    Some(client)
}

fn append(file: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .unwrap_or_else(|e| panic!("opening {}: {e}", file.display()));
    f.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
}
