//! Opening connections and channels with bounded waits, and the jittered exponential
//! backoff every reconnect loop uses. We supervise reconnects ourselves instead of
//! lapin's `enable_auto_recover()`: a fresh connection gets a fresh topology declare,
//! QoS and subscription, and ackers of the dead channel are simply poisoned (Ok(false)).

use crate::{config::BrokerConfig, error::BrokerError};
use lapin::{options::ConfirmSelectOptions, Channel, Connection, ConnectionProperties};
use std::{
    collections::hash_map::RandomState,
    hash::{BuildHasher, Hasher},
    sync::{
        atomic::{AtomicUsize, Ordering},
        OnceLock,
    },
    time::Duration,
};
use tracing::debug;

/// Where connections start trying: a random offset per process plus one per connection,
/// so the replicas of a worker spread over a cluster's nodes and a reconnect after a
/// node's loss does not begin with the node that was just lost.
static FIRST_NODE: OnceLock<usize> = OnceLock::new();
static CONNECTIONS: AtomicUsize = AtomicUsize::new(0);

/// Opens one connection to the first node of `amqp_url` that answers, trying each node in
/// turn from a rotating start, each bounded by `connect_timeout_ms` (TCP + handshake).
pub(crate) async fn open(cfg: &BrokerConfig, role: &str) -> Result<Connection, BrokerError> {
    let uris = cfg.amqp_uris()?;
    // Shown in the management UI and `rabbitmqctl list_connections` (tests find their
    // own connections by namespace); it carries no secret.
    let name = match cfg.namespace.as_str() {
        "" => format!("fleet {role}"),
        ns => format!("fleet {role} [{ns}]"),
    };
    let start = next_start(uris.len());
    let mut last = None;
    for uri in uris.iter().cycle().skip(start).take(uris.len()) {
        let target = format!("{}:{}", uri.authority.host, uri.authority.port);
        let props = ConnectionProperties::default().with_connection_name(name.clone().into());
        let bound = Duration::from_millis(cfg.connect_timeout_ms);
        let failed =
            match tokio::time::timeout(bound, Connection::connect_uri(uri.clone(), props)).await {
                Ok(Ok(conn)) => {
                    debug!(role, node = %target, "connected to the broker");
                    return Ok(conn);
                }
                Ok(Err(e)) => BrokerError::amqp("connect")(e),
                Err(_) => BrokerError::ConnectTimeout {
                    target: target.clone(),
                    timeout_ms: cfg.connect_timeout_ms,
                },
            };
        if uris.len() > 1 {
            debug!(role, node = %target, error = %failed, "broker node unavailable; trying the next");
        }
        last = Some(failed);
    }
    Err(last.expect("amqp_uris returns at least one node"))
}

/// The index of the node a new connection tries first, among `nodes`.
fn next_start(nodes: usize) -> usize {
    let offset = *FIRST_NODE.get_or_init(|| (random_u64() % 1_000_003) as usize);
    offset.wrapping_add(CONNECTIONS.fetch_add(1, Ordering::Relaxed)) % nodes
}

/// A channel in publisher-confirm mode.
pub(crate) async fn confirm_channel(conn: &Connection) -> Result<Channel, BrokerError> {
    let channel = conn
        .create_channel()
        .await
        .map_err(BrokerError::amqp("channel.open"))?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .map_err(BrokerError::amqp("confirm.select"))?;
    Ok(channel)
}

/// Closes a connection politely, bounded, ignoring failure (it may already be dead).
pub(crate) async fn close_quietly(conn: &Connection, reason: &str) {
    let bound = Duration::from_millis(crate::config::CLOSE_TIMEOUT_MS);
    let _ = tokio::time::timeout(bound, conn.close(200, reason.into())).await;
}

/// Capped exponential backoff with jitter in [d/2, d], so a fleet of workers that lost
/// the broker together does not reconnect in lockstep.
#[derive(Debug)]
pub(crate) struct Backoff {
    min_ms: u64,
    max_ms: u64,
    attempt: u32,
}

impl Backoff {
    pub(crate) fn new(min_ms: u64, max_ms: u64) -> Self {
        Self {
            min_ms,
            max_ms,
            attempt: 0,
        }
    }

    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = capped_exponential_ms(self.min_ms, self.max_ms, self.attempt);
        self.attempt = self.attempt.saturating_add(1);
        let half = delay / 2;
        Duration::from_millis(half + random_u64() % (delay - half + 1))
    }

    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
    }
}

/// `min * 2^attempt`, never above `max`, never overflowing.
pub(crate) fn capped_exponential_ms(min_ms: u64, max_ms: u64, attempt: u32) -> u64 {
    min_ms
        .checked_shl(attempt.min(63))
        .filter(|d| *d >> attempt.min(63) == min_ms)
        .unwrap_or(max_ms)
        .min(max_ms)
}

/// Randomness for jitter and consumer tags without a crate: std seeds every
/// `RandomState` from OS randomness plus a per-thread counter.
pub(crate) fn random_u64() -> u64 {
    RandomState::new().build_hasher().finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_is_capped_and_never_overflows() {
        assert_eq!(capped_exponential_ms(100, 5_000, 0), 100);
        assert_eq!(capped_exponential_ms(100, 5_000, 3), 800);
        assert_eq!(capped_exponential_ms(100, 5_000, 10), 5_000);
        assert_eq!(capped_exponential_ms(100, 5_000, u32::MAX), 5_000);
    }

    #[test]
    fn jittered_delay_stays_within_half_and_full() {
        let mut b = Backoff::new(100, 400);
        for expected in [100u64, 200, 400, 400] {
            let d = b.next_delay().as_millis() as u64;
            assert!(d >= expected / 2 && d <= expected, "{d} vs {expected}");
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }
}
