//! Passkeys made in the console: a person's browser creates one with its virtual
//! authenticator, and an administrator accepts its registration with `fleetctl`.

use crate::{Browser, TestFleet};

impl Browser {
    /// On the console's passkeys page (from the signed-in page's link), creates a passkey
    /// with the browser's authenticator: the key id the console shows, waiting for an
    /// administrator.
    pub async fn create_passkey(&self) -> String {
        self.click("a[href=\"/console/passkeys\"]").await;
        self.click("#create-passkey").await;
        self.text("code.key-id").await
    }
}

impl TestFleet {
    /// The administrator `test-admin` accepts the registration of `key_id` with
    /// `fleetctl key accept`, which must succeed.
    pub async fn accept_key(&self, key_id: &str) {
        let accepted = self
            .fleetctl_with(&[("FLEET_ADMIN", "test-admin")], &["key", "accept", key_id])
            .await;
        assert!(
            accepted.status.success(),
            "{}",
            String::from_utf8_lossy(&accepted.stderr)
        );
    }
}
