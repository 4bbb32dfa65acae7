//! fleetctl, as a person runs it, refuses a secret file that its group or others may
//! read (a signing key, a token file), naming the file and the `chmod 600` fix, before
//! reading it or calling anything; the same file made its owner's only is used.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fleet_tests::TestFleet;

/// A directory of the test's own, removed when dropped (on every path).
struct TempDir(PathBuf);

impl TempDir {
    fn new(fleet: &TestFleet) -> TempDir {
        let dir = std::env::temp_dir().join(format!("fleet-secrets-{}", fleet.name()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// fleetctl's stderr for `args`, which must fail.
async fn refused(fleet: &TestFleet, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = fleet.fleetctl_with(env, args).await;
    assert!(!out.status.success(), "fleetctl {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn fleetctl_refuses_a_signing_key_or_token_file_others_may_read_naming_the_fix() {
    let fleet = TestFleet::start().await;
    let dir = TempDir::new(&fleet);
    let key = dir.0.join("alice.key");
    let key_path = key.display().to_string();
    fleet
        .fleetctl(&["key", "generate", "--out", &key_path])
        .await;
    let token = dir.0.join("agent.token");
    std::fs::write(&token, "fleet_not_a_real_token\n").unwrap();
    let token_path = token.display().to_string();
    // Nothing listens on port 9: a command that got past the file would fail otherwise.
    let api = [("FLEET_API_URL", "http://127.0.0.1:9")];
    let approve = [
        "approve",
        "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
        "--hash",
        "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "--key",
        &key_path,
    ];
    let with_token = [api[0], ("FLEET_TOKEN", "fleet_not_a_real_token")];

    chmod(&key, 0o644);
    chmod(&token, 0o640);
    let stderr = refused(&fleet, &with_token, &approve).await;
    assert!(
        stderr.contains(&format!("the signing key {key_path}"))
            && stderr.contains("mode 0644")
            && stderr.contains(&format!("chmod 600 {key_path}")),
        "{stderr}"
    );
    let from_file = [api[0], ("FLEET_TOKEN_FILE", token_path.as_str())];
    let stderr = refused(&fleet, &from_file, &["list"]).await;
    assert!(
        stderr.contains(&format!("the token file {token_path}"))
            && stderr.contains("mode 0640")
            && stderr.contains(&format!("chmod 600 {token_path}"))
            && !stderr.contains("fleet_not_a_real_token"),
        "{stderr}"
    );

    // Their owner's only: both are read, and the command goes on to the API.
    chmod(&key, 0o600);
    chmod(&token, 0o600);
    for stderr in [
        refused(&fleet, &with_token, &approve).await,
        refused(&fleet, &from_file, &["list"]).await,
    ] {
        assert!(!stderr.contains("chmod 600"), "{stderr}");
    }
    fleet.stop().await;
}
