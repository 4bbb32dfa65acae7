//! Links the API hands out (an operation's approval page, to agents over HTTP and MCP)
//! must lead somewhere: listening on every interface without `API_PUBLIC_URL`, the real
//! fleet-api refuses to start and says which setting is missing.

use fleet_tests::TestFleet;

#[tokio::test]
async fn the_api_listening_on_every_interface_without_a_public_url_refuses_to_start() {
    let fleet = TestFleet::start().await;
    let mut api = fleet.spawn_process_unsetting(
        "fleet-api",
        &[("API_ADDR", "0.0.0.0:0")],
        &["API_PUBLIC_URL"],
    );
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = api.exited() {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "fleet-api kept running: {}",
            api.log_text()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(!status.success());
    let log = api.log_text();
    assert!(
        log.contains("listens on every interface") && log.contains("API_PUBLIC_URL"),
        "{log}"
    );
    // Told where it is reached, the same process starts.
    let started = fleet.spawn_process(
        "fleet-api",
        &[
            ("API_ADDR", "0.0.0.0:0"),
            ("API_PUBLIC_URL", "https://fleet.example.com"),
        ],
    );
    started.wait_for_log("api listening").await;
    drop(started);
    fleet.stop().await;
}
