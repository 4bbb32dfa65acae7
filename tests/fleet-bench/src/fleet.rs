//! The bench's processes: the provider simulator and N replicas of each worker, on free
//! ports from `--port-base` (each worker's ADMIN_ADDR must be known to scrape it), with
//! the bench database and namespace, JSON logs at `--worker-log` level to files.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;

use fleetctl::processes::{self, Proc};

/// How far above `--port-base` free ports are looked for.
const PORT_SEARCH_SPAN: u16 = 1_000;

pub const PREPARE: &str = "fleet-prepare";
pub const EXECUTE: &str = "fleet-execute";
pub const RECONCILE: &str = "fleet-reconcile";
pub const WEBHOOK_INGEST: &str = "fleet-webhook-ingest";
/// Publishes the outcome events: part of what every operation costs.
pub const RELAY: &str = "fleet-relay";
const SIM: &str = "fleet-provider-sim";
/// The webhook receiver refuses to start without a signing secret. Nothing signs webhooks
/// during a bench; this bench-only key (`whsec_` + base64 of 32 bytes) is not a secret.
const BENCH_WEBHOOK_SECRET: &str = "whsec_ZmxlZXQtYmVuY2gtd2ViaG9vay1zaWduaW5nLWtleSE=";

/// A started process the bench measures.
#[derive(Debug, Clone)]
pub struct Member {
    /// The binary (`fleet-execute`), the same for every replica.
    pub bin: &'static str,
    /// Unique: `fleet-execute#1`.
    pub name: String,
    pub pid: u32,
    /// The worker's admin server (`/metrics`); `None` for the simulator.
    pub admin: Option<SocketAddr>,
}

pub struct FleetSpec<'a> {
    pub bin_dir: &'a Path,
    pub log_dir: &'a Path,
    pub database_url: &'a str,
    pub amqp_url: &'a str,
    pub namespace: &'a str,
    pub port_base: u16,
    /// (binary, replicas)
    pub replicas: [(&'static str, u16); 5],
    pub log_level: &'a str,
    /// Extra environment for every worker (e.g. UNSTARTED_REDRIVE_MS).
    pub worker_env: Vec<(&'static str, String)>,
    /// Extra environment for the simulator (e.g. SIM_RATE_LIMIT_PER_S).
    pub sim_env: Vec<(&'static str, String)>,
}

pub struct BenchFleet {
    procs: Vec<Proc>,
    pub members: Vec<Member>,
    pub sim_url: String,
}

struct Ports(u16, u16);

impl Ports {
    /// The next port from the base that can be bound now (a small race with other
    /// programs remains; the worker then fails to bind and the bench says so).
    fn take(&mut self) -> anyhow::Result<u16> {
        while self.0 < self.1 {
            let port = self.0;
            self.0 += 1;
            if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return Ok(port);
            }
        }
        anyhow::bail!("no free port below {}; pass another --port-base", self.1)
    }
}

fn pid_of(p: &Proc) -> anyhow::Result<u32> {
    p.pid()
        .ok_or_else(|| anyhow::anyhow!("{} exited at once; see its log", p.name))
}

impl BenchFleet {
    pub async fn start(spec: &FleetSpec<'_>) -> anyhow::Result<BenchFleet> {
        let client = reqwest::Client::new();
        // Each component as its own database role, as deployed; a baseline revision whose
        // migrations predate the roles runs as the owner, as it always did.
        let prefix = fleet_store::RolePrefix::of(spec.database_url)?;
        let roles = fleet_store::Store::connect(spec.database_url, 1)?
            .grants_component_roles(&prefix)
            .await?;
        let mut ports = Ports(
            spec.port_base,
            spec.port_base.saturating_add(PORT_SEARCH_SPAN),
        );
        let sim_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, ports.take()?)).to_string();
        let sim_url = format!("http://{sim_addr}");
        let mut sim_env: Vec<(&str, &str)> =
            vec![("SIM_ADDR", &sim_addr), ("RUST_LOG", spec.log_level)];
        sim_env.extend(spec.sim_env.iter().map(|(k, v)| (*k, v.as_str())));
        let sim = processes::spawn(spec.bin_dir, spec.log_dir, SIM, SIM, &sim_env)?;
        let mut members = vec![Member {
            bin: SIM,
            name: SIM.into(),
            pid: pid_of(&sim)?,
            admin: None,
        }];
        let mut fleet = BenchFleet {
            procs: vec![sim],
            members: Vec::new(),
            sim_url,
        };
        processes::wait_http_ok(
            &client,
            &format!("{}/_sim/effects", fleet.sim_url),
            "the provider simulator",
        )
        .await?;

        for (bin, n) in spec.replicas {
            for i in 0..n {
                let admin = SocketAddr::from((Ipv4Addr::LOCALHOST, ports.take()?));
                let admin_s = admin.to_string();
                let database_url = match roles {
                    true => processes::component_database_url(spec.database_url, bin)?,
                    false => spec.database_url.to_owned(),
                };
                let mut envs: Vec<(&str, &str)> = vec![
                    ("DATABASE_URL", &database_url),
                    ("AMQP_URL", spec.amqp_url),
                    ("AMQP_NAMESPACE", spec.namespace),
                    ("PAYMENTS_URL", &fleet.sim_url),
                    ("CRM_URL", &fleet.sim_url),
                    ("ADMIN_ADDR", &admin_s),
                    ("LOG_FORMAT", "json"),
                    ("RUST_LOG", spec.log_level),
                    // The load is published as the broker user of AMQP_URL, which no
                    // principal speaks as.
                    ("PREPARE_ANONYMOUS_INTENTS", "allow"),
                ];
                envs.extend(spec.worker_env.iter().map(|(k, v)| (*k, v.as_str())));
                let webhook_addr;
                if bin == WEBHOOK_INGEST {
                    webhook_addr =
                        SocketAddr::from((Ipv4Addr::LOCALHOST, ports.take()?)).to_string();
                    envs.extend([
                        ("WEBHOOK_ADDR", webhook_addr.as_str()),
                        ("WEBHOOK_SECRETS", BENCH_WEBHOOK_SECRET),
                    ]);
                }
                let name = format!("{bin}#{i}");
                let p = processes::spawn(spec.bin_dir, spec.log_dir, bin, &name, &envs)?;
                members.push(Member {
                    bin,
                    name,
                    pid: pid_of(&p)?,
                    admin: Some(admin),
                });
                fleet.procs.push(p);
            }
        }
        for m in &members {
            if let Some(admin) = m.admin {
                processes::wait_http_ok(&client, &format!("http://{admin}/readyz"), &m.name)
                    .await?;
            }
        }
        fleet.members = members;
        Ok(fleet)
    }

    pub fn workers(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.admin.is_some())
    }

    pub async fn stop(&mut self) {
        processes::stop_all(&mut self.procs).await;
    }
}
