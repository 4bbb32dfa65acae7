//! The benchmark's smoke mode runs in the default test run: every mode of `fleet-bench`
//! completes on a small N and its report says every operation succeeded exactly once.
//! (The full benchmark reports figures; it is not a timed test.)

use std::process::Command;

use fleet_tests::{alone_blocking, bin_dir, policy_dir};
use serde_json::Value;

/// Runs the smoke mode; the path of the JSON report it was given.
fn smoke(mode: &[&str], name: &str, port_base: &str) -> std::path::PathBuf {
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
    json
}

fn read(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the report {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// `path` with `-<suffix>` before `.json`, as fleet-bench names the files of a run of rounds.
fn suffixed(path: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let stem = path.file_stem().unwrap().to_str().unwrap();
    path.with_file_name(format!("{stem}-{suffix}.json"))
}

#[test]
fn the_execute_and_pipeline_smoke_runs_complete_every_operation_once() {
    // Each mode starts a whole fleet of processes on fixed ports and loads both cores.
    let _alone = alone_blocking();
    for (mode, name, port) in [
        (&["--mode", "execute"][..], "execute", "19501"),
        (&["--mode", "pipeline"][..], "pipeline", "19521"),
    ] {
        let report = read(&smoke(mode, name, port));
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
        // The pipeline's approve → final without the workers' first seconds: a share of
        // the operations (none when the whole run is over within them); execute mode
        // approves everything before the workers start and has no such figure.
        let warm = report.pointer("/results/rows/approve_to_final_warm/count");
        match name {
            "pipeline" => assert!(
                warm.and_then(Value::as_u64).is_some_and(|n| n <= ops),
                "{name}: approve → final after the first seconds is reported: {warm:?}"
            ),
            _ => assert_eq!(
                report.pointer("/results/rows/approve_to_final_warm"),
                Some(&Value::Null),
                "{name}: no warm-up figure in execute mode"
            ),
        }
    }
}

/// What a result must carry about where it ran, so that two machines' figures can be
/// compared; and `--rounds` without a baseline gives each figure's median and range.
#[test]
fn a_report_carries_its_machine_and_rounds_give_the_spread() {
    let _alone = alone_blocking();
    let json = smoke(&["--mode", "execute", "--rounds", "2"], "rounds", "19541");
    let runs = read(&suffixed(&json, "runs"));
    assert_eq!(runs["kind"], "repeated");
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(2), "{runs}");
    let throughput = runs["spreads"]
        .as_array()
        .and_then(|s| s.iter().find(|f| f["figure"] == "throughput"))
        .unwrap_or_else(|| panic!("a throughput spread: {runs}"));
    let (min, median, max) = (
        throughput["min"].as_f64().unwrap(),
        throughput["median"].as_f64().unwrap(),
        throughput["max"].as_f64().unwrap(),
    );
    assert!(0.0 < min && min <= median && median <= max, "{throughput}");

    let one = read(&suffixed(&json, "run-1"));
    let machine = &one["machine"];
    for setting in [
        "autovacuum",
        "jit",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "wal_level",
        "shared_preload_libraries",
    ] {
        assert!(
            machine["postgres_settings"][setting].is_string(),
            "the report names the server's {setting}: {machine}"
        );
    }
    assert!(machine["cpu_model"].is_string() && machine["postgres"].is_string());
    let calibration = &machine["calibration"];
    for probe in [
        "commit_ms",
        "cpu_loop_ms",
        "memory_hop_ns",
        "wakeup_same_cpu_us",
    ] {
        let v = calibration[probe].as_f64().unwrap_or(0.0);
        assert!(
            v > 0.0,
            "the calibration's {probe} is measured: {calibration}"
        );
    }
    let speed = &machine["speed_during_window"];
    assert!(
        speed["samples"].as_u64().unwrap_or(0) >= 1
            && speed["p50_us"].as_f64().unwrap_or(0.0) > 0.0,
        "the core's speed is sampled during the window: {speed}"
    );
    let usage = &one["results"]["usage"];
    assert!(usage["machine_steal_cpu_s"].is_number(), "{usage}");
    let by_component = usage["postgres_fleet_cpu_ms_per_op_by_component"]
        .as_object()
        .unwrap_or_else(|| panic!("Postgres CPU by component: {usage}"));
    assert!(
        by_component.contains_key("execute"),
        "execute's backends are counted: {by_component:?}"
    );
}
