//! The promise, checked after a soak (chaos, a failover): for every operation a test
//! submitted, what the operation log says against what the provider simulator did.
//!
//! - missing: an operation the test had acknowledged is not stored;
//! - duplicates: an operation with more than one provider effect;
//! - mismatched: the log and the provider disagree (succeeded without exactly one effect,
//!   or failed / cancelled with one);
//! - lost: stored but neither final nor escalated;
//! - blind retries: a claim after `unknown` without a lookup that found nothing between;
//! - drift: a keyed request under another key (or an unkeyed one with a key), or a row
//!   whose hash changed;
//! - broken histories: a move recorded from another status than the one the previous move
//!   left, or under an older fence than a move before it: what a write by a worker that
//!   no longer held the row (a stale lease, a session cut off and replayed) would leave.

use std::collections::HashMap;
use std::time::Duration;

use fleet_core::history::HistoryKind;
use fleet_core::Status;
use serde_json::json;
use tokio::time::Instant;

use crate::{at, TestFleet};

/// Paths whose requests carry the operation's idempotency key.
const KEYED_PATHS: [&str; 3] = ["/v1/payments", "/v1/refunds", "/v1/envelopes"];

#[derive(Default, Debug)]
pub struct PromiseReport {
    pub missing: usize,
    pub duplicates: usize,
    pub mismatched: usize,
    pub lost: usize,
    pub blind_retries: usize,
    pub drift: usize,
    pub broken_histories: usize,
    pub escalated: usize,
    pub by_status: HashMap<String, usize>,
}

impl PromiseReport {
    /// Fails the test on any breach of the promise, naming `context` (a seed, a phase).
    pub fn assert_kept(&self, context: &str) {
        let breaches = [
            ("missing", self.missing),
            ("duplicates", self.duplicates),
            ("mismatched", self.mismatched),
            ("lost", self.lost),
            ("blind_retries", self.blind_retries),
            ("drift", self.drift),
            ("broken_histories", self.broken_histories),
        ];
        let broken: Vec<_> = breaches.iter().filter(|(_, n)| *n > 0).collect();
        assert!(broken.is_empty(), "{context}: {broken:?} ({self:?})");
    }
}

impl TestFleet {
    /// Waits until no operation is open (every one final or escalated), failing after
    /// `within` naming how many are still open.
    pub async fn settles(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let open = self
                .count(
                    "SELECT count(*) FROM operations WHERE status NOT IN \
                     ('succeeded','failed','cancelled','disputed') AND escalated_at IS NULL",
                )
                .await;
            if open == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{open} operations still open after {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Checks the operations `ops` ((operation id of [`crate::TENANT`], payload hash) each)
/// against the simulator's request log and effects.
pub async fn check_promise(fleet: &TestFleet, ops: &[(String, String)]) -> PromiseReport {
    let mut report = PromiseReport::default();
    for r in fleet.sim_requests(None).await {
        let keyed = KEYED_PATHS.contains(&r["path"].as_str().unwrap_or(""));
        if (keyed && r["idempotency_key"] != r["reference"])
            || (!keyed && !r["idempotency_key"].is_null())
        {
            report.drift += 1;
        }
    }
    for (op, hash) in ops {
        let Some(row) = fleet.store.get(at(op)).await.unwrap() else {
            report.missing += 1;
            continue;
        };
        *report.by_status.entry(row.status.to_string()).or_default() += 1;
        if &row.payload_hash != hash || row.snapshot().hash().as_str() != hash {
            report.drift += 1;
        }
        let effects = fleet.sim_effects(op).await;
        if effects > 1 {
            report.duplicates += 1;
        }
        if !(row.status.is_final() || row.escalated_at.is_some()) {
            report.lost += 1;
        }
        if row.escalated_at.is_some() {
            report.escalated += 1;
        }
        let expected = match row.status {
            Status::Succeeded => Some(1),
            Status::Failed | Status::Cancelled => Some(0),
            _ => None,
        };
        if expected.is_some_and(|n| n != effects) {
            report.mismatched += 1;
        }
        let events = fleet.store.events(at(op)).await.unwrap();
        report.blind_retries += blind_retries(&events);
        report.broken_histories += usize::from(history_breaks(&events));
    }
    report
}

/// Claims that followed an `unknown` with no lookup that found nothing in between.
pub fn blind_retries(events: &[fleet_store::EventRow]) -> usize {
    let mut unknown_since_last_absence = false;
    let mut blind = 0;
    for e in events {
        match (e.kind, e.to_status) {
            (HistoryKind::Transition, Some(Status::Unknown)) => unknown_since_last_absence = true,
            (HistoryKind::Lookup, _)
                if e.evidence.as_ref().is_some_and(|v| v["found"] == json!([])) =>
            {
                unknown_since_last_absence = false
            }
            (HistoryKind::Transition, Some(Status::InProgress)) if unknown_since_last_absence => {
                blind += 1
            }
            _ => {}
        }
    }
    blind
}

/// Whether the moves of one operation's history do not follow each other: a move from
/// another status than the previous move's, or under a fence older than an earlier move's.
pub fn history_breaks(events: &[fleet_store::EventRow]) -> bool {
    let mut status: Option<Status> = None;
    let mut fence: Option<i64> = None;
    for e in events.iter().filter(|e| e.to_status.is_some()) {
        if let (Some(from), Some(before)) = (e.from_status, status) {
            if from != before {
                return true;
            }
        }
        if e.kind == HistoryKind::Transition {
            if let (Some(f), Some(before)) = (e.fence, fence) {
                if f < before {
                    return true;
                }
            }
            fence = e.fence.or(fence);
        }
        status = e.to_status;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(id: i64, from: Option<Status>, to: Status, fence: i64) -> fleet_store::EventRow {
        fleet_store::EventRow {
            id,
            operation_id: fleet_core::OperationId::parse("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8").unwrap(),
            kind: if from.is_some() {
                HistoryKind::Transition
            } else {
                HistoryKind::Prepared
            },
            from_status: from,
            to_status: Some(to),
            fence: Some(fence),
            actor: "execute".into(),
            reason: None,
            evidence: None,
            at: chrono::Utc::now(),
        }
    }

    #[test]
    fn a_chain_of_moves_is_whole_and_a_stale_write_breaks_it() {
        let chain = [
            moved(1, None, Status::NotStarted, 0),
            moved(2, Some(Status::NotStarted), Status::InProgress, 1),
            moved(3, Some(Status::InProgress), Status::Unknown, 1),
            moved(4, Some(Status::Unknown), Status::Succeeded, 1),
        ];
        assert!(!history_breaks(&chain));
        // A worker that lost its lease records its answer after reconcile moved the row.
        let mut stale = chain.to_vec();
        stale.push(moved(5, Some(Status::InProgress), Status::Succeeded, 1));
        assert!(history_breaks(&stale));
        // A claim lost with the primary and made again under the same fence, then a
        // write under the older one.
        let older = [
            moved(1, None, Status::NotStarted, 0),
            moved(2, Some(Status::NotStarted), Status::InProgress, 2),
            moved(3, Some(Status::InProgress), Status::Succeeded, 1),
        ];
        assert!(history_breaks(&older));
    }
}
