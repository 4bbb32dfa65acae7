//! How much of a provider's request the receiver reads, and for how long: bounds set by
//! the settings and enforced by the receiver, so they live apart from both.

use std::time::Duration;

/// The largest request head read (the signature header alone may be 8 KiB).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Bounds on the requests the handler reads: how large a body may be, how long its
/// reading may take, and how many are read (and published) at once, which bounds the
/// memory bodies hold to about `max_concurrent × 5 × max_body_bytes` (the body, its
/// base64 envelope, the serialised message and the frames being published).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    pub max_body_bytes: usize,
    pub max_concurrent: usize,
    /// From the end of the head: waiting for a turn, then reading the whole body.
    pub body_timeout: Duration,
}
