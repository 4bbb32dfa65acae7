//! Named pause points for crash tests: with `FLEET_PAUSE_AT=<point>` the worker stops at
//! that line (logging that it did) and waits to be killed, so a test can SIGKILL it inside
//! an exact crash window. Unset, each point costs one comparison.

use std::sync::OnceLock;

pub const BEFORE_PROVIDER_CALL: &str = "before_provider_call";
pub const AFTER_PROVIDER_RESPONSE: &str = "after_provider_response";
pub const AFTER_RECORD: &str = "after_record";

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
