//! Where the intakes find their quorum policies, tried with the real binaries: started
//! from any directory without `POLICY_DIR`, prepare and the API judge by the policies built
//! into them; a `POLICY_DIR` that cannot be read stops the start at once, naming the
//! directory and why.

use fleet_tests::{intent, op_of, TestFleet};

#[tokio::test]
async fn without_policy_dir_the_binaries_use_their_built_in_policies_from_any_directory() {
    let fleet = TestFleet::start().await;
    // The test runs in tests/fleet-tests, where no `shared/policies` is.
    assert!(!std::path::Path::new("shared/policies").exists());
    let prepare = fleet.spawn_process_unsetting("fleet-prepare", &[], &["POLICY_DIR"]);
    prepare.wait_for_log("consumer subscribed").await;
    assert!(
        prepare.log_text().contains("built in"),
        "{}",
        prepare.log_text()
    );
    let seed = intent();
    fleet.submit(&seed).await;
    // Judged by a built-in policy: stored, pending its approvers.
    fleet.prepared(&op_of(&seed)).await;
    let api =
        fleet.spawn_process_unsetting("fleet-api", &[("API_ADDR", "127.0.0.1:0")], &["POLICY_DIR"]);
    api.wait_for_log("api listening").await;
    drop((prepare, api));
    fleet.stop().await;
}

#[tokio::test]
async fn a_policy_dir_that_cannot_be_read_stops_the_start_naming_it() {
    let fleet = TestFleet::start().await;
    let missing = "/nonexistent/fleet-policies";
    for binary in ["fleet-prepare", "fleet-api"] {
        let mut process = fleet.spawn_process(
            binary,
            &[("POLICY_DIR", missing), ("API_ADDR", "127.0.0.1:0")],
        );
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(status) = process.exited() {
                break status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{binary} did not stop: {}",
                process.log_text()
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        assert!(!status.success());
        let log = process.log_text();
        assert!(
            log.contains(&format!("reading the policy directory {missing}")),
            "{binary}: {log}"
        );
    }
    fleet.stop().await;
}
