//! SIGTERM cancels the shutdown token instead of killing the process. Its own test binary,
//! because it signals the whole process.

use std::time::Duration;

use fleet_runtime::shutdown_token;

#[tokio::test]
async fn sigterm_cancels_the_token() {
    let token = shutdown_token();
    assert!(!token.is_cancelled());
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    tokio::time::timeout(Duration::from_secs(5), token.cancelled())
        .await
        .expect("token cancelled within 5 s of SIGTERM");
}
