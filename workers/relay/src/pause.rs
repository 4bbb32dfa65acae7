//! A named pause point for crash tests: with `FLEET_PAUSE_AT=after_publish` the relay
//! stops after the broker confirmed a batch and before the commit that marks it published
//! (logging that it did), and waits to be killed. Unset, it costs one comparison.

use std::sync::OnceLock;

pub const AFTER_PUBLISH: &str = "after_publish";

fn configured() -> Option<&'static str> {
    static POINT: OnceLock<Option<String>> = OnceLock::new();
    POINT
        .get_or_init(|| {
            std::env::var("FLEET_PAUSE_AT")
                .ok()
                .filter(|p| !p.is_empty())
        })
        .as_deref()
}

pub async fn point(name: &'static str) {
    if configured() == Some(name) {
        tracing::warn!(
            pause_point = name,
            "FLEET_PAUSE_AT reached; waiting to be killed"
        );
        std::future::pending::<()>().await;
    }
}
