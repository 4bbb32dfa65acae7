//! A short calibration probe, run before every measurement, and a speed probe sampled
//! during it. Their times say how fast this machine's disk flushes, its cores compute, its
//! memory answers and its processes wake each other right now, so figures taken on two
//! machines (or at two moments on a shared one) can be compared: a run whose commit probe
//! is twice as slow is not a fleet twice as slow.
//!
//! Each probe isolates one cost the fleet's figures depend on:
//! - a Postgres commit (round trip and WAL flush): the floor of every transaction;
//! - an integer loop on one core: the core's speed, without memory;
//! - a pointer chase through 32 MiB: the memory's latency (Postgres and RabbitMQ wait on
//!   it far more than the workers do);
//! - a ping-pong between two threads, on two cores and on one: the CPU a wakeup costs. The
//!   fleet's processes hand work to each other many times per operation (worker →
//!   Postgres → worker, worker → broker → worker), and on a virtual machine waking a
//!   process on another vCPU may cost several times what it costs on one.

use std::hint::black_box;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::sql::BenchSql;

/// Commits in the Postgres probe: each a one-row insert in its own transaction, as
/// durable as the server is configured (the bench never changes that).
pub const PROBE_COMMITS: u32 = 300;
/// Rounds of the CPU probe (a xorshift generator: integer work with no memory traffic).
pub const PROBE_CPU_ROUNDS: u64 = 50_000_000;
/// Entries (u32) of the pointer chase: 32 MiB, larger than any last-level cache here.
const CHASE_ENTRIES: usize = 8 << 20;
/// Dependent loads timed in the pointer chase.
const CHASE_HOPS: usize = 1_000_000;
/// Round trips of each ping-pong probe.
const PING_PONGS: u32 = 5_000;
/// Rounds of one in-window speed sample (about 2 ms of one core).
const SAMPLE_ROUNDS: u64 = 1_000_000;
/// Time between two in-window speed samples: the probe costs under 1% of one core.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub commits: u32,
    /// Mean wall time of one commit (round trip, WAL flush).
    pub commit_ms: f64,
    pub cpu_rounds: u64,
    /// Wall time of the CPU loop on one core.
    pub cpu_loop_ms: f64,
    /// Mean time of one dependent load from memory (32 MiB pointer chase).
    pub memory_hop_ns: f64,
    /// CPU time (both threads) of one ping-pong round trip between two threads pinned
    /// to two different CPUs: two wakeups across CPUs. `None` on a one-CPU machine.
    pub wakeup_cross_cpu_us: Option<f64>,
    /// The same with both threads pinned to one CPU: two wakeups and switches on one CPU.
    pub wakeup_same_cpu_us: Option<f64>,
}

impl Calibration {
    pub fn line(&self) -> String {
        let us = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{v:.1} µs"));
        format!(
            "calibration: {:.3} ms per Postgres commit ({} commits), {:.0} ms CPU loop ({} M rounds), {:.0} ns per memory load, ping-pong CPU {} across CPUs / {} on one",
            self.commit_ms,
            self.commits,
            self.cpu_loop_ms,
            self.cpu_rounds / 1_000_000,
            self.memory_hop_ns,
            us(self.wakeup_cross_cpu_us),
            us(self.wakeup_same_cpu_us),
        )
    }

    /// What one in-window speed sample would take at the calibration loop's speed.
    pub fn sample_us(&self) -> f64 {
        self.cpu_loop_ms * 1e3 * SAMPLE_ROUNDS as f64 / PROBE_CPU_ROUNDS as f64
    }
}

/// Runs the probes against the bench database (a table of its own, dropped after).
pub async fn probe(sql: &BenchSql) -> anyhow::Result<Calibration> {
    let client = sql.client().await?;
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS bench_calibration (n int NOT NULL)")
        .await?;
    let insert = client
        .prepare("INSERT INTO bench_calibration (n) VALUES ($1)")
        .await?;
    let started = Instant::now();
    for n in 0..PROBE_COMMITS as i32 {
        client.execute(&insert, &[&n]).await?;
    }
    let commit_ms = started.elapsed().as_secs_f64() * 1e3 / f64::from(PROBE_COMMITS);
    client.batch_execute("DROP TABLE bench_calibration").await?;
    let (cpu_loop_ms, memory_hop_ns, cross, same) = tokio::task::spawn_blocking(|| {
        let cpu = cpu_loop_ms();
        let memory = memory_hop_ns();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cross = (cpus >= 2).then(|| ping_pong_cpu_us(0, 1)).flatten();
        let same = ping_pong_cpu_us(0, 0);
        (cpu, memory, cross, same)
    })
    .await?;
    Ok(Calibration {
        commits: PROBE_COMMITS,
        commit_ms,
        cpu_rounds: PROBE_CPU_ROUNDS,
        cpu_loop_ms,
        memory_hop_ns,
        wakeup_cross_cpu_us: cross,
        wakeup_same_cpu_us: same,
    })
}

fn xorshift_rounds(rounds: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    x
}

fn cpu_loop_ms() -> f64 {
    let started = Instant::now();
    black_box(xorshift_rounds(PROBE_CPU_ROUNDS));
    started.elapsed().as_secs_f64() * 1e3
}

/// One random cycle through `CHASE_ENTRIES` slots (Sattolo's shuffle), then `CHASE_HOPS`
/// loads each depending on the one before: the prefetcher cannot guess the next address.
fn memory_hop_ns() -> f64 {
    let mut next: Vec<u32> = (0..CHASE_ENTRIES as u32).collect();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in (1..CHASE_ENTRIES).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        next.swap(i, j);
    }
    let mut at = 0u32;
    // One pass over part of the cycle first, so that page faults are not timed.
    for _ in 0..CHASE_HOPS / 4 {
        at = next[at as usize];
    }
    let started = Instant::now();
    for _ in 0..CHASE_HOPS {
        at = next[at as usize];
    }
    black_box(at);
    started.elapsed().as_secs_f64() * 1e9 / CHASE_HOPS as f64
}

/// The CPU time of the calling thread, in seconds.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes into; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Pins the calling thread to `cpu`; false if the machine refuses.
fn pin_to(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it, and
    // sched_setaffinity(0, ..) applies to the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// CPU time, both threads together, of one round trip between a thread on `cpu_a` and
/// one on `cpu_b`, over a Unix socket pair (a blocking read wakes on the other's write).
fn ping_pong_cpu_us(cpu_a: usize, cpu_b: usize) -> Option<f64> {
    let (mut a, mut b) = UnixStream::pair().ok()?;
    let echo = std::thread::spawn(move || -> Option<f64> {
        if !pin_to(cpu_b) {
            return None;
        }
        let start = thread_cpu_s();
        let mut byte = [0u8; 1];
        for _ in 0..PING_PONGS {
            b.read_exact(&mut byte).ok()?;
            b.write_all(&byte).ok()?;
        }
        Some(thread_cpu_s() - start)
    });
    let mine = (|| -> Option<f64> {
        if !pin_to(cpu_a) {
            return None;
        }
        let start = thread_cpu_s();
        let mut byte = [7u8; 1];
        for _ in 0..PING_PONGS {
            a.write_all(&byte).ok()?;
            a.read_exact(&mut byte).ok()?;
        }
        Some(thread_cpu_s() - start)
    })();
    // A failed side drops its socket end, which ends the other's loop with an error.
    drop(a);
    let theirs = echo.join().ok().flatten();
    let total = mine? + theirs?;
    Some(total * 1e6 / f64::from(PING_PONGS))
}

/// The core's speed sampled through the measured window: every `SAMPLE_EVERY`, the
/// thread CPU time of a fixed loop. CPU time, not wall time, so waiting for a core the
/// fleet keeps busy does not count; what slows it is the core itself (a neighbour on
/// the same physical core, the host's frequency, caches the fleet shares).
pub struct SpeedProbe {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<f64>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The in-window samples: microseconds of CPU per sample of `SAMPLE_ROUNDS` rounds.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedDuringWindow {
    pub samples: usize,
    pub p50_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// The same loop at the calibration's speed, measured before the window.
    pub calibration_us: f64,
}

impl SpeedDuringWindow {
    /// The samples, set beside what the same loop took at `calibration`'s speed.
    pub fn against(mut self, calibration: Option<&Calibration>) -> SpeedDuringWindow {
        self.calibration_us = calibration.map_or(f64::NAN, Calibration::sample_us);
        self
    }

    /// How much slower the core ran during the window than at calibration (1.0: as fast).
    pub fn slowdown(&self) -> f64 {
        self.p50_us / self.calibration_us
    }
    pub fn line(&self) -> String {
        format!(
            "core speed during the window: {:.0} µs per probe loop (p50 of {}, {:.0}–{:.0}); {:.0} µs at calibration ({:.2}× slower during the window)",
            self.p50_us,
            self.samples,
            self.min_us,
            self.max_us,
            self.calibration_us,
            self.slowdown()
        )
    }
}

impl SpeedProbe {
    pub fn start() -> SpeedProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (s, out) = (stop.clone(), samples.clone());
        let thread = std::thread::Builder::new()
            .name("speed-probe".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    let t0 = thread_cpu_s();
                    black_box(xorshift_rounds(SAMPLE_ROUNDS));
                    let us = (thread_cpu_s() - t0) * 1e6;
                    if us.is_finite() {
                        out.lock().expect("speed samples").push(us);
                    }
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
            .ok();
        SpeedProbe {
            stop,
            samples,
            thread,
        }
    }

    /// Stops the probe; `None` if it took no sample. `calibration_us` is filled in by
    /// the machine that holds the calibration ([`SpeedDuringWindow::against`]).
    pub fn finish(mut self) -> Option<SpeedDuringWindow> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut v = std::mem::take(&mut *self.samples.lock().ok()?);
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(SpeedDuringWindow {
            samples: v.len(),
            p50_us: v[v.len() / 2],
            min_us: v[0],
            max_us: v[v.len() - 1],
            calibration_us: f64::NAN,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ping_pong_costs_cpu_on_both_sides() {
        let us = ping_pong_cpu_us(0, 0).expect("CPU 0 exists");
        assert!(us > 0.0 && us.is_finite(), "{us}");
    }

    #[test]
    fn the_speed_probe_samples_until_stopped() {
        let probe = SpeedProbe::start();
        std::thread::sleep(Duration::from_millis(300));
        let speed = probe.finish().expect("at least one sample");
        assert!(speed.samples >= 1);
        assert!(speed.min_us <= speed.p50_us && speed.p50_us <= speed.max_us);
    }
}
