//! The log of create requests as they arrived (and when), with how each was answered, so that a test
//! can assert "exactly one provider POST" for an operation.
//!
//! Bounded: past `MAX_LOGGED_REQUESTS` the oldest entries are forgotten (a long demo must
//! not grow without limit; a test never gets near it).

use std::collections::VecDeque;

use serde::Serialize;

const MAX_LOGGED_REQUESTS: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoggedRequest {
    pub method: &'static str,
    pub path: &'static str,
    pub idempotency_key: Option<String>,
    pub reference: Option<String>,
    /// `None` while unanswered and for good when the connection was dropped.
    pub status: Option<u16>,
    pub replayed: bool,
    /// When it arrived (RFC 3339, UTC, microseconds), stamped by [`RequestLog::record`]:
    /// a test compares it with a moment the database recorded.
    pub arrived_at: String,
}

/// Position of an entry, stable while older entries are evicted.
#[derive(Clone, Copy, Debug)]
pub struct Seq(u64);

#[derive(Debug, Default)]
pub struct RequestLog {
    entries: VecDeque<LoggedRequest>,
    // Sequence number of `entries[0]`.
    first_seq: u64,
}

impl RequestLog {
    pub fn record(&mut self, mut entry: LoggedRequest) -> Seq {
        entry.arrived_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        if self.entries.len() >= MAX_LOGGED_REQUESTS {
            self.entries.pop_front();
            self.first_seq += 1;
        }
        self.entries.push_back(entry);
        Seq(self.first_seq + self.entries.len() as u64 - 1)
    }

    /// Records how the request was answered (`None`: the connection was dropped).
    pub fn finish(&mut self, seq: Seq, status: Option<u16>, replayed: bool) {
        let Some(offset) = seq.0.checked_sub(self.first_seq) else {
            return;
        };
        if let Some(entry) = usize::try_from(offset)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
        {
            entry.status = status;
            entry.replayed = replayed;
        }
    }

    /// Entries in arrival order, only those with this reference if one is given.
    pub fn matching(&self, reference: Option<&str>) -> Vec<LoggedRequest> {
        self.entries
            .iter()
            .filter(|entry| reference.is_none() || entry.reference.as_deref() == reference)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(reference: &str) -> LoggedRequest {
        LoggedRequest {
            method: "POST",
            path: "/v1/payments",
            idempotency_key: Some(reference.to_owned()),
            reference: Some(reference.to_owned()),
            status: None,
            replayed: false,
            arrived_at: String::new(),
        }
    }

    #[test]
    fn entries_are_finished_in_place_and_filtered_by_reference() {
        let mut log = RequestLog::default();
        let first = log.record(arrival("op_a"));
        log.record(arrival("op_b"));
        let third = log.record(arrival("op_a"));
        log.finish(third, Some(201), true);
        log.finish(first, Some(201), false);

        let a = log.matching(Some("op_a"));
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].status, a[0].replayed), (Some(201), false));
        assert_eq!((a[1].status, a[1].replayed), (Some(201), true));
        assert_eq!(log.matching(None).len(), 3);
    }

    #[test]
    fn the_oldest_entries_are_evicted_past_the_bound() {
        let mut log = RequestLog::default();
        let first = log.record(arrival("op_first"));
        for _ in 0..MAX_LOGGED_REQUESTS {
            log.record(arrival("op_x"));
        }
        log.finish(first, Some(201), false);
        assert!(log.matching(Some("op_first")).is_empty());
        assert_eq!(log.matching(None).len(), MAX_LOGGED_REQUESTS);
    }
}
