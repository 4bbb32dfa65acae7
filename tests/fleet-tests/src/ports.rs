//! Ports for servers a test stops and starts again on the same address (a broker node, an
//! API replica, a proxy).
//!
//! A port the kernel handed out as free (`bind` to port 0) lies in the ephemeral range,
//! from which the kernel also picks the local port of every outgoing connection. While
//! its server is down (killed, about to restart), any connection the machine opens may
//! take that port as its own end, and the server's restart then fails to bind it: on a
//! busy machine, with a fleet reconnecting to everything at once, that happens. Ports
//! below the ephemeral range are never handed out that way; one is taken here at random
//! among those no listener holds.

use std::net::TcpListener;
use std::sync::Mutex;

/// Ports given out by this process, never given twice.
static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// A port below the ephemeral range that no listener holds now, never given before by
/// this process.
pub fn fixed_port() -> u16 {
    let (low, high) = range_below_ephemeral();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        ^ (u64::from(std::process::id()) << 32);
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..10_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let port = low + (seed % u64::from(high - low)) as u16;
        // The well-known ports of the machine's own broker and its tools stay free.
        if [4369, 5672, 15672, 25672].contains(&port) || given.contains(&port) {
            continue;
        }
        // Free on every address, as a server binding 0.0.0.0 (a broker's distribution
        // port) will need it.
        if TcpListener::bind(("0.0.0.0", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free port in {low}..{high}");
}

/// `[low, high)`: the ports from 20000 up to the start of the ephemeral range
/// (`/proc/sys/net/ipv4/ip_local_port_range`, 32768 by default).
fn range_below_ephemeral() -> (u16, u16) {
    let start: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    if start > 21_000 {
        (20_000, start)
    } else {
        // An unusual range starting low: take ports above its end instead.
        (61_000, 65_000)
    }
}
