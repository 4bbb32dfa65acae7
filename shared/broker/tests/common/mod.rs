//! Shared harness for the broker tests: a fresh namespace per test on the real broker,
//! deleted afterwards even when the test panics, and waits on conditions with deadlines.
#![allow(dead_code)] // each test binary uses a different subset

use fleet_broker::{delete_namespace, lapin, BrokerConfig};
use futures_util::FutureExt;
use std::{future::Future, panic::AssertUnwindSafe, time::Duration};
use tokio::time::Instant;

/// Every wait in these tests gives up after this long.
pub const DEADLINE: Duration = Duration::from_secs(20);
const POLL_INTERVAL: Duration = Duration::from_millis(25);

pub fn amqp_url() -> String {
    std::env::var("FLEET_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

/// A config in a namespace no other test uses.
pub fn fresh_config() -> BrokerConfig {
    let namespace = format!("t{}", ulid::Ulid::new()).to_lowercase();
    BrokerConfig::new(amqp_url()).with_namespace(namespace)
}

/// Runs `body` in a fresh namespace and deletes the namespace afterwards, also when
/// `body` panics (the panic is then re-raised).
pub async fn in_namespace<F, Fut>(cfg: BrokerConfig, body: F)
where
    F: FnOnce(BrokerConfig) -> Fut,
    Fut: Future<Output = ()>,
{
    let outcome = AssertUnwindSafe(body(cfg.clone())).catch_unwind().await;
    delete_namespace(&cfg).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Polls `condition` until it holds; panics naming `what` at the deadline.
pub async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if condition().await {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// A raw lapin connection for poking at the broker from outside the crate's API.
pub async fn raw_channel(cfg: &BrokerConfig) -> (lapin::Connection, lapin::Channel) {
    let conn = lapin::Connection::connect(&cfg.amqp_url, lapin::ConnectionProperties::default())
        .await
        .expect("raw connection");
    let channel = conn.create_channel().await.expect("raw channel");
    (conn, channel)
}

/// Force-closes, broker side, every connection this namespace opened whose name
/// contains `role` (e.g. "publisher", "consumer"). Returns how many were closed, or
/// None when `rabbitmqctl` is not available here.
pub async fn kill_connections(cfg: &BrokerConfig, role: &str) -> Option<usize> {
    let marker = format!("fleet {role}");
    let listing = tokio::process::Command::new("rabbitmqctl")
        .args(["list_connections", "-q", "pid", "client_properties"])
        .output()
        .await
        .ok()?;
    if !listing.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&listing.stdout).into_owned();
    let mut closed = 0;
    for line in text.lines() {
        if !(line.contains(&marker) && line.contains(&format!("[{}]", cfg.namespace))) {
            continue;
        }
        let Some(pid) = line.split_whitespace().next() else {
            continue;
        };
        let closing = tokio::process::Command::new("rabbitmqctl")
            .args([
                "close_connection",
                pid,
                "test: simulated broker-side failure",
            ])
            .output()
            .await
            .ok()?;
        assert!(
            closing.status.success(),
            "rabbitmqctl close_connection {pid} failed"
        );
        closed += 1;
    }
    Some(closed)
}
