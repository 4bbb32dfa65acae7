//! The wall clock in Unix seconds: read here, at the edges of the worker, and handed to
//! the signature check, which reads no clock itself.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn unix_now() -> i64 {
    // A clock before 1970 makes every timestamp "out of tolerance", which is the safe side.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
