//! `fleetctl demo` through the real binary while another fleet consumes the queues the
//! caller's namespace names: the demo runs in a database and a broker namespace of its
//! own, so the other fleet takes none of its intents, every effect matches, and at the end
//! both are gone. Alone: the demo's workers serve their admin endpoints at their default
//! addresses, which no other test's processes may hold meanwhile.

use std::time::Duration;

use fleet_broker::Queue;
use fleet_tests::{alone, bin_dir, free_addr, printed_after, DemoRun, TestFleet};

/// The value printed after `label` on a line of `stdout` that starts with it.
fn printed<'a>(stdout: &'a str, label: &str) -> &'a str {
    printed_after(stdout, label)
        .unwrap_or_else(|| panic!("the demo did not print {label:?}: {stdout}"))
}

#[tokio::test]
async fn a_demo_beside_a_consuming_fleet_keeps_to_its_own_database_and_namespace() {
    let _alone = alone().await;
    // The other fleet: prepare consumes intents.prepare of the namespace and stores into
    // the database the demo is pointed at.
    let mut other = TestFleet::start().await;
    other.spawn_prepare();
    let logs = std::env::temp_dir().join(format!("fleet-demo-sandbox-{}", ulid::Ulid::new()));
    let (api, sim, webhooks) = (free_addr(), free_addr(), free_addr());
    let log_dir = logs.display().to_string();
    let bins = bin_dir().display().to_string();
    let args = [
        "demo",
        "--count",
        "8",
        "--timeout-s",
        "90",
        "--api-addr",
        &api,
        "--sim-addr",
        &sim,
        "--bin-dir",
        &bins,
        "--log-dir",
        &log_dir,
    ];
    let out = tokio::time::timeout(
        Duration::from_secs(240),
        other.fleetctl_with(&[("WEBHOOK_ADDR", webhooks.as_str())], &args),
    )
    .await
    .expect("the demo ends within 4 minutes");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // Removed on every path, should the demo have left them.
    let run = DemoRun::printed(&stdout, &other.broker.amqp_url);
    assert!(
        out.status.success(),
        "the demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&logs);

    // Every effect matches, for every operation the demo made.
    let matched = printed(&stdout, "provider effects match the log for ");
    let (n, rest) = matched.split_once(" of ").expect("N of M");
    assert_eq!(rest, format!("{n} operations"), "{stdout}");
    assert!(n.parse::<usize>().unwrap() > 8, "{stdout}");
    // In names of its own, printed at the start, inside the caller's namespace.
    let namespace = printed(&stdout, "broker namespace: ");
    assert!(
        namespace.starts_with(&format!("{}.demo-", other.broker.namespace)),
        "{namespace}"
    );
    let database = run.as_ref().expect("where the demo ran").database.clone();
    assert!(
        database.starts_with(&format!("{}_demo_", other.name())),
        "{database}"
    );
    // The other fleet stored none of the demo's intents.
    assert_eq!(other.count("SELECT count(*) FROM operations").await, 0);
    // And both are removed.
    assert!(stdout.contains("removed database "), "{stdout}");
    let databases = other
        .count(&format!(
            "SELECT count(*) FROM pg_database WHERE datname = '{database}'"
        ))
        .await;
    assert_eq!(databases, 0, "the demo's database is left behind");
    let demo_broker = &run.as_ref().expect("where the demo ran").broker;
    for queue in Queue::ALL {
        assert!(
            fleet_broker::message_count(demo_broker, queue)
                .await
                .is_err(),
            "{queue} of the demo's namespace is left behind"
        );
    }
    drop(run);
    other.stop().await;
}
