//! The binary: configured by flags and environment, logs to stderr without the API key,
//! exits cleanly on SIGTERM.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn the_binary_serves_and_exits_cleanly_on_sigterm() {
    // Reserve a free port, then let the process bind it.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleet-provider-sim"))
        .env("SIM_ADDR", addr.to_string())
        .env("SIM_API_KEY", "sk_test_secret_value")
        .env("RUST_LOG", "debug")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the simulator binary");
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut logged = String::new();

    let listening = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            logged.push_str(&line);
            logged.push('\n');
            if line.contains("listening") {
                return true;
            }
        }
        false
    });
    assert!(
        listening.await.unwrap_or(false),
        "never listened; stderr:\n{logged}"
    );

    let response = reqwest::Client::new()
        .get(format!("http://{addr}/v1/payments?reference=op_bin"))
        .bearer_auth("sk_test_secret_value")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::OK);

    let pid = child.id().expect("running").to_string();
    let kill = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(kill.success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success(), "exit status {status}");

    while let Some(line) = stderr.next_line().await.unwrap() {
        logged.push_str(&line);
    }
    assert!(
        !logged.contains("sk_test_secret_value"),
        "the API key leaked into the logs"
    );
}
