//! Named pause points for crash tests: with `FLEET_PAUSE_AT=<point>` a worker stops at
//! that point (logging that it did) and waits to be killed, so a test can SIGKILL it
//! inside an exact crash window. Each worker names its own points; unset, each costs one
//! comparison.

use std::sync::OnceLock;

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

/// Waits forever if `FLEET_PAUSE_AT` names `name`; returns at once otherwise.
pub async fn point(name: &'static str) {
    if configured() == Some(name) {
        tracing::warn!(
            pause_point = name,
            "FLEET_PAUSE_AT reached; waiting to be killed"
        );
        std::future::pending::<()>().await;
    }
}
