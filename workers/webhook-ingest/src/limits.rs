//! How much of a provider's request the receiver reads, and for how long: bounds set by
//! the settings and enforced by the receiver, so they live apart from both.

use fleet_runtime::BodyPace;

/// The largest request head read (the signature header alone may be 8 KiB).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Bounds on the requests the handler reads: how large a body may be, how long its
/// reading may take, and how many are published at once. A body is read (and its
/// signature checked) before the request takes a turn, so slow or forged deliveries hold
/// no turn; the memory bodies hold is about `max_connections × max_body_bytes` being read
/// plus `max_concurrent × 5 × max_body_bytes` being published (the body, its base64
/// envelope, the serialised message and the frames being published).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    pub max_body_bytes: usize,
    pub max_concurrent: usize,
    /// The body's deadlines; its total time is also how long a verified delivery may
    /// wait for a turn.
    pub body: BodyPace,
}
