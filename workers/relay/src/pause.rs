//! The relay's pause point for crash tests (`FLEET_PAUSE_AT`, see
//! [`fleet_runtime::pause`]): after the broker confirmed a batch and before the commit
//! that marks it published.

pub use fleet_runtime::pause::point;

pub const AFTER_PUBLISH: &str = "after_publish";
/// After a dead letter was kept in Postgres and before it is acked on the broker.
pub const AFTER_KEEP: &str = "after_keep";
/// After a notification was sent and before it is marked sent.
pub const AFTER_NOTIFY_SEND: &str = "after_notify_send";
