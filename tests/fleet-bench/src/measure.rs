//! Readings taken at the start and at the end of the measured window, and what the
//! difference says: CPU seconds and peak RSS per process (from `/proc`), broker messages
//! (the workers' own `fleet_messages_*` counters), and the CPU of the services the fleet
//! shares the machine with (Postgres backends, RabbitMQ, everything else).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use serde::Serialize;

use super::fleet::{BenchFleet, Member};
use super::procfs::{self, MachineTicks, ServiceTicks};
use super::scrape::{self, MessageCounts};

/// Command names of the co-located services (`/proc/<pid>/comm`).
const POSTGRES_COMM: &str = "postgres";
const RABBITMQ_COMM: &str = "beam.smp";

pub struct ProcSample {
    at: Instant,
    /// CPU ticks by member, in `fleet.members` order.
    ticks: Vec<Option<u64>>,
    /// Broker counters by member (`None` for the simulator), same order.
    messages: Vec<Option<MessageCounts>>,
    own_ticks: Option<u64>,
    postgres: ServiceTicks,
    rabbitmq: ServiceTicks,
    machine: MachineTicks,
}

impl ProcSample {
    pub async fn take(fleet: &BenchFleet, http: &reqwest::Client) -> anyhow::Result<ProcSample> {
        let mut messages = Vec::with_capacity(fleet.members.len());
        for m in &fleet.members {
            messages.push(match m.admin {
                Some(admin) => Some(scrape::message_counts(
                    &scrape::metrics_text(http, admin).await?,
                )),
                None => None,
            });
        }
        Ok(ProcSample {
            at: Instant::now(),
            ticks: fleet
                .members
                .iter()
                .map(|m| procfs::cpu_ticks(m.pid))
                .collect(),
            messages,
            own_ticks: procfs::cpu_ticks(std::process::id()),
            postgres: ServiceTicks::read(POSTGRES_COMM),
            rabbitmq: ServiceTicks::read(RABBITMQ_COMM),
            machine: MachineTicks::read(),
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessUsage {
    pub name: String,
    pub bin: String,
    pub cpu_s: f64,
    pub cpu_ms_per_op: f64,
    /// VmHWM at the end of the window: the process's peak since it started.
    pub peak_rss_mib: f64,
    pub messages: Option<MessageCounts>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Usage {
    pub window_s: f64,
    pub processes: Vec<ProcessUsage>,
    /// Every worker process together (not the simulator).
    pub workers_cpu_s: f64,
    pub workers_cpu_ms_per_op: f64,
    pub execute_cpu_ms_per_op: f64,
    pub max_worker_peak_rss_mib: f64,
    pub worker_messages: MessageCounts,
    pub bench_cpu_s: f64,
    /// Every `postgres` process on the machine (all databases, not only the bench's).
    pub postgres_cpu_s: f64,
    pub postgres_cpu_ms_per_op: f64,
    /// The Postgres processes that worked for the fleet: its backends on the bench
    /// database (not the bench's own) and the background processes. On a machine shared
    /// with other databases this is the figure to compare; a backend that exited during
    /// the window is missing from it.
    pub postgres_fleet_cpu_s: f64,
    pub postgres_fleet_cpu_ms_per_op: f64,
    /// The same by what each process works for (the component whose role a backend
    /// logged in as, or a background process's type): where Postgres's time goes.
    pub postgres_fleet_cpu_ms_per_op_by_component: BTreeMap<String, f64>,
    /// Every `beam.smp` process on the machine.
    pub rabbitmq_cpu_s: f64,
    pub rabbitmq_cpu_ms_per_op: f64,
    /// Busy CPU of the whole machine, and what is left after everything above.
    pub machine_busy_cpu_s: f64,
    pub machine_capacity_cpu_s: f64,
    /// CPU time the hypervisor gave to others during the window (`steal` of /proc/stat).
    pub machine_steal_cpu_s: f64,
    pub other_cpu_s: f64,
}

fn secs(ticks: u64, tck: u64) -> f64 {
    ticks as f64 / tck as f64
}

fn delta(after: Option<u64>, before: Option<u64>) -> u64 {
    after.unwrap_or(0).saturating_sub(before.unwrap_or(0))
}

pub fn usage(
    before: &ProcSample,
    after: &ProcSample,
    members: &[Member],
    fleet_backends: &HashMap<u32, String>,
    ops: usize,
    tck: u64,
) -> Usage {
    let per_op = |s: f64| s * 1000.0 / ops.max(1) as f64;
    let mut processes = Vec::with_capacity(members.len());
    let mut worker_messages = MessageCounts::default();
    for (i, m) in members.iter().enumerate() {
        let cpu_s = secs(delta(after.ticks[i], before.ticks[i]), tck);
        let messages = match (&after.messages[i], &before.messages[i]) {
            (Some(a), Some(b)) => Some(a.since(b)),
            _ => None,
        };
        if let Some(mc) = &messages {
            worker_messages.add(mc);
        }
        processes.push(ProcessUsage {
            name: m.name.clone(),
            bin: m.bin.to_owned(),
            cpu_s,
            cpu_ms_per_op: per_op(cpu_s),
            peak_rss_mib: procfs::peak_rss_kib(m.pid).unwrap_or(0) as f64 / 1024.0,
            messages,
        });
    }
    let workers: Vec<&ProcessUsage> = processes.iter().filter(|p| p.messages.is_some()).collect();
    let workers_cpu_s: f64 = workers.iter().map(|p| p.cpu_s).sum();
    let execute_cpu_s: f64 = workers
        .iter()
        .filter(|p| p.bin == super::fleet::EXECUTE)
        .map(|p| p.cpu_s)
        .sum();
    let max_worker_peak_rss_mib = workers.iter().map(|p| p.peak_rss_mib).fold(0.0, f64::max);
    let sim_cpu_s: f64 = processes
        .iter()
        .filter(|p| p.messages.is_none())
        .map(|p| p.cpu_s)
        .sum();
    let bench_cpu_s = secs(delta(after.own_ticks, before.own_ticks), tck);
    let postgres_cpu_s = secs(after.postgres.since(&before.postgres), tck);
    let fleet_pids: HashSet<u32> = fleet_backends.keys().copied().collect();
    let postgres_fleet_cpu_s = secs(after.postgres.since_for(&before.postgres, &fleet_pids), tck);
    let mut postgres_by_component: BTreeMap<String, f64> = BTreeMap::new();
    for (pid, component) in fleet_backends {
        let s = secs(after.postgres.since_of(&before.postgres, *pid), tck);
        *postgres_by_component.entry(component.clone()).or_default() += per_op(s);
    }
    let rabbitmq_cpu_s = secs(after.rabbitmq.since(&before.rabbitmq), tck);
    let machine_busy_cpu_s = secs(after.machine.busy.saturating_sub(before.machine.busy), tck);
    let machine_capacity_cpu_s = secs(
        after.machine.total.saturating_sub(before.machine.total),
        tck,
    );
    let accounted = workers_cpu_s + sim_cpu_s + bench_cpu_s + postgres_cpu_s + rabbitmq_cpu_s;
    Usage {
        window_s: after.at.duration_since(before.at).as_secs_f64(),
        workers_cpu_s,
        workers_cpu_ms_per_op: per_op(workers_cpu_s),
        execute_cpu_ms_per_op: per_op(execute_cpu_s),
        max_worker_peak_rss_mib,
        worker_messages,
        bench_cpu_s,
        postgres_cpu_s,
        postgres_cpu_ms_per_op: per_op(postgres_cpu_s),
        postgres_fleet_cpu_s,
        postgres_fleet_cpu_ms_per_op: per_op(postgres_fleet_cpu_s),
        postgres_fleet_cpu_ms_per_op_by_component: postgres_by_component,
        rabbitmq_cpu_s,
        rabbitmq_cpu_ms_per_op: per_op(rabbitmq_cpu_s),
        machine_busy_cpu_s,
        machine_capacity_cpu_s,
        machine_steal_cpu_s: secs(
            after.machine.steal.saturating_sub(before.machine.steal),
            tck,
        ),
        other_cpu_s: (machine_busy_cpu_s - accounted).max(0.0),
        processes,
    }
}
