//! Idempotency keys with Stripe's semantics, shared by every create route.
//!
//! A key is bound to the fingerprint of its first request. While that request runs the
//! key is in flight (a second use answers 409); once execution has begun its response,
//! whatever it is (201, 402, a 5xx after commit), is saved and replayed. Requests that
//! never began executing (validation failures, conflicts, faults before commit) leave no
//! trace under the key. A key is forgotten once it is older than the retention window.

use std::collections::HashMap;

use axum::http::StatusCode;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

/// A response saved under a key, replayed verbatim on a matching retry.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedResponse {
    pub status: StatusCode,
    pub body: Value,
}

/// What to do with a request that carries a key.
#[derive(Debug, PartialEq)]
pub enum Begin {
    /// The key was unseen (or expired): it is now in flight, the caller executes.
    Execute,
    /// Same key, same parameters: answer this, marked as a replay.
    Replay(SavedResponse),
    /// The first request with this key is still executing.
    InUse,
    /// The key was first used with different parameters.
    Reused,
}

#[derive(Debug)]
enum Progress {
    InFlight,
    Done(SavedResponse),
}

impl Progress {
    const fn is_done(&self) -> bool {
        match self {
            Progress::InFlight => false,
            Progress::Done(_) => true,
        }
    }
}

#[derive(Debug)]
struct Entry {
    fingerprint: String,
    first_seen: DateTime<Utc>,
    progress: Progress,
}

#[derive(Debug)]
pub struct IdempotencyStore {
    retention: TimeDelta,
    entries: HashMap<String, Entry>,
    // Expired entries are swept when the map reaches this size, so that memory stays
    // proportional to the keys inside the window without a sweep on every request.
    sweep_at: usize,
}

const MIN_SWEEP_AT: usize = 1024;

impl IdempotencyStore {
    pub fn new(retention: TimeDelta) -> Self {
        Self {
            retention,
            entries: HashMap::new(),
            sweep_at: MIN_SWEEP_AT,
        }
    }

    pub fn begin(&mut self, key: &str, fingerprint: String, now: DateTime<Utc>) -> Begin {
        self.sweep_if_due(now);
        if let Some(entry) = self.entries.get(key) {
            match &entry.progress {
                Progress::InFlight => return Begin::InUse,
                Progress::Done(_) if self.is_expired(entry, now) => {}
                Progress::Done(_) if entry.fingerprint != fingerprint => return Begin::Reused,
                Progress::Done(saved) => return Begin::Replay(saved.clone()),
            }
        }
        let entry = Entry {
            fingerprint,
            first_seen: now,
            progress: Progress::InFlight,
        };
        self.entries.insert(key.to_owned(), entry);
        Begin::Execute
    }

    pub fn forget_all(&mut self) {
        self.entries.clear();
        self.sweep_at = MIN_SWEEP_AT;
    }

    /// Saves the response of an execution that `begin` allowed.
    pub fn complete(&mut self, key: &str, response: SavedResponse) {
        // The entry is missing only if an admin reset ran meanwhile; the response is then
        // not saved, as if the key had been forgotten.
        if let Some(entry) = self.entries.get_mut(key) {
            entry.progress = Progress::Done(response);
        }
    }

    fn is_expired(&self, entry: &Entry, now: DateTime<Utc>) -> bool {
        // An in-flight key never expires: its first request has not answered yet.
        entry.progress.is_done() && now - entry.first_seen >= self.retention
    }

    fn sweep_if_due(&mut self, now: DateTime<Utc>) {
        if self.entries.len() < self.sweep_at {
            return;
        }
        let retention = self.retention;
        self.entries
            .retain(|_, entry| !entry.progress.is_done() || now - entry.first_seen < retention);
        self.sweep_at = (self.entries.len() * 2).max(MIN_SWEEP_AT);
    }
}

/// The parameters a key is bound to: the route and the body with object members sorted,
/// so that member order (which JSON does not define) cannot make equal requests differ.
pub fn fingerprint(route: &str, body: &Value) -> String {
    let mut out = String::from(route);
    out.push(' ');
    write_canonical(body, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(members) => {
            let mut sorted: Vec<_> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, member)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn store() -> IdempotencyStore {
        IdempotencyStore::new(TimeDelta::hours(24))
    }

    fn created() -> SavedResponse {
        SavedResponse {
            status: StatusCode::CREATED,
            body: json!({"id": "pay_1"}),
        }
    }

    #[test]
    fn fingerprint_ignores_member_order_but_not_values_or_route() {
        let a = json!({"amount_minor": 1, "nested": {"x": 1, "y": [1, {"b": 2, "a": 1}]}});
        let b = json!({"nested": {"y": [1, {"a": 1, "b": 2}], "x": 1}, "amount_minor": 1});
        assert_eq!(
            fingerprint("POST /v1/payments", &a),
            fingerprint("POST /v1/payments", &b)
        );
        let c = json!({"amount_minor": 2, "nested": {"x": 1, "y": [1, {"b": 2, "a": 1}]}});
        assert_ne!(
            fingerprint("POST /v1/payments", &a),
            fingerprint("POST /v1/payments", &c)
        );
        assert_ne!(
            fingerprint("POST /v1/payments", &a),
            fingerprint("POST /v1/refunds", &a)
        );
    }

    #[test]
    fn first_use_executes_then_in_use_until_completed_then_replays() {
        let mut keys = store();
        let now = Utc::now();
        assert_eq!(keys.begin("k", "f".into(), now), Begin::Execute);
        assert_eq!(keys.begin("k", "f".into(), now), Begin::InUse);
        keys.complete("k", created());
        assert_eq!(keys.begin("k", "f".into(), now), Begin::Replay(created()));
        assert_eq!(keys.begin("k", "other".into(), now), Begin::Reused);
    }

    #[test]
    fn a_key_is_forgotten_after_the_retention_window_only() {
        let mut keys = store();
        let now = Utc::now();
        keys.begin("k", "f".into(), now);
        keys.complete("k", created());
        let almost = now + TimeDelta::hours(24) - TimeDelta::seconds(1);
        assert_eq!(
            keys.begin("k", "f".into(), almost),
            Begin::Replay(created())
        );
        assert_eq!(
            keys.begin("k", "other".into(), now + TimeDelta::hours(24)),
            Begin::Execute
        );
    }

    #[test]
    fn an_in_flight_key_never_expires() {
        let mut keys = store();
        let now = Utc::now();
        keys.begin("k", "f".into(), now);
        assert_eq!(
            keys.begin("k", "f".into(), now + TimeDelta::days(3)),
            Begin::InUse
        );
    }

    #[test]
    fn sweeping_drops_expired_keys_only() {
        let mut keys = store();
        let now = Utc::now();
        // One less than the sweep threshold, so that the in-flight key fills it and the
        // sweep runs on the last, much later, request.
        for i in 0..MIN_SWEEP_AT - 1 {
            keys.begin(&format!("old_{i}"), "f".into(), now);
            keys.complete(&format!("old_{i}"), created());
        }
        keys.begin("in_flight", "f".into(), now);
        keys.begin("fresh", "f".into(), now + TimeDelta::days(2));
        assert_eq!(keys.entries.len(), 2);
        assert!(keys.entries.contains_key("in_flight"));
    }
}
