//! The benchmark's smoke mode runs in the default test run: every mode of `fleet-bench`
//! completes on a small N and its report says every operation succeeded exactly once.
//! (The full benchmark reports figures; it is not a timed test.)

use std::process::Command;

use fleet_tests::{alone_blocking, bin_dir, policy_dir};
use serde_json::Value;

fn smoke(mode: &[&str], name: &str, port_base: &str) -> Value {
    let dir = bin_dir();
    let json = dir.join(format!("bench-smoke-{name}.json"));
    let status = Command::new(dir.join("fleet-bench"))
        // The workers it starts read the repository's quorum policies.
        .env("POLICY_DIR", policy_dir())
        .args([
            "--smoke",
            "--db-name",
            &format!("fleet_bench_smoke_{name}"),
            "--namespace",
            &format!("fleet-bench-smoke-{name}"),
            "--port-base",
            port_base,
        ])
        .args(mode)
        .arg("--bin-dir")
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .arg("--log-dir")
        .arg(dir.join(format!("bench-smoke-{name}-logs")))
        .status()
        .expect("run fleet-bench");
    assert!(status.success(), "fleet-bench {mode:?} failed");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn the_execute_and_pipeline_smoke_runs_complete_every_operation_once() {
    // Each mode starts a whole fleet of processes on fixed ports and loads both cores.
    let _alone = alone_blocking();
    for (mode, name, port) in [
        (&["--mode", "execute"][..], "execute", "19501"),
        (&["--mode", "pipeline"][..], "pipeline", "19521"),
    ] {
        let report = smoke(mode, name, port);
        let ops = report
            .pointer("/results/ops")
            .and_then(Value::as_u64)
            .expect("ops in the report");
        assert!(ops > 0, "{name}: the smoke run did something");
        assert_eq!(
            report
                .pointer("/results/rows/statuses/succeeded")
                .and_then(Value::as_u64),
            Some(ops),
            "{name}: every operation succeeded"
        );
        assert_eq!(
            report
                .pointer("/results/provider_payments")
                .and_then(Value::as_u64),
            Some(ops),
            "{name}: one provider effect per operation"
        );
        assert!(
            report
                .pointer("/results/rows/claim_to_final/p99_ms")
                .and_then(Value::as_f64)
                .is_some(),
            "{name}: latency figures are reported"
        );
    }
}
