//! The promise, checked after a run that killed things: the operation log against the
//! provider simulator's request log and effect counters.
//!
//! - duplicates: operations with more than one provider effect (must be 0);
//! - mismatched: the log and the provider disagree (succeeded without exactly one effect,
//!   or failed/cancelled with one);
//! - lost: operations neither final nor escalated (must be 0);
//! - blind retries: a claim after `unknown` without a lookup that found nothing in
//!   between (must be 0);
//! - drift: a keyed request under another key (or an unkeyed one with a key), or a row
//!   whose hash changed (must be 0).

use std::collections::HashMap;
use std::time::Duration;

use fleet_core::Status;
use serde_json::json;
use tokio::time::Instant;

use crate::{at, TestFleet};

/// Paths whose requests carry the operation's idempotency key.
const KEYED_PATHS: [&str; 3] = ["/v1/payments", "/v1/refunds", "/v1/envelopes"];

#[derive(Default, Debug)]
pub struct Audit {
    pub duplicates: usize,
    pub mismatched: usize,
    pub lost: usize,
    pub blind_retries: usize,
    pub drift: usize,
    pub escalated: usize,
    pub by_status: HashMap<String, usize>,
}

impl Audit {
    /// Fails the test naming every figure that broke the promise.
    pub fn assert_promise_held(&self, context: &str) {
        assert!(
            self.duplicates == 0
                && self.mismatched == 0
                && self.lost == 0
                && self.blind_retries == 0
                && self.drift == 0,
            "{context}: {self:?}"
        );
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

    /// Audits `ops` (operation id, approved hash), all of [`crate::TENANT`].
    pub async fn audit(&self, ops: &[(String, String)]) -> Audit {
        let mut audit = Audit::default();
        for r in &self.sim_requests(None).await {
            let keyed = KEYED_PATHS.contains(&r["path"].as_str().unwrap_or(""));
            if (keyed && r["idempotency_key"] != r["reference"])
                || (!keyed && !r["idempotency_key"].is_null())
            {
                audit.drift += 1;
            }
        }
        for (op, hash) in ops {
            let row = self
                .store
                .get(at(op))
                .await
                .unwrap()
                .expect("every submitted operation exists");
            *audit.by_status.entry(row.status.to_string()).or_default() += 1;
            if &row.payload_hash != hash || row.snapshot().hash().as_str() != hash {
                audit.drift += 1;
            }
            let effects = self.sim_effects(op).await;
            if effects > 1 {
                audit.duplicates += 1;
            }
            if !(row.status.is_final() || row.escalated_at.is_some()) {
                audit.lost += 1;
            }
            if row.escalated_at.is_some() {
                audit.escalated += 1;
            }
            let expected = match row.status {
                Status::Succeeded => Some(1),
                Status::Failed | Status::Cancelled => Some(0),
                _ => None,
            };
            if expected.is_some_and(|n| n != effects) {
                audit.mismatched += 1;
            }
            audit.blind_retries += blind_retries(&self.store.events(at(op)).await.unwrap());
        }
        audit
    }
}

/// Claims that followed an `unknown` with no lookup that found nothing in between.
pub fn blind_retries(events: &[fleet_store::EventRow]) -> usize {
    let mut unknown_since_last_absence = false;
    let mut blind = 0;
    for e in events {
        match (e.kind.as_str(), e.to_status.as_deref()) {
            ("transition", Some("unknown")) => unknown_since_last_absence = true,
            ("lookup", _) if e.evidence.as_ref().is_some_and(|v| v["found"] == json!([])) => {
                unknown_since_last_absence = false
            }
            ("transition", Some("in_progress")) if unknown_since_last_absence => blind += 1,
            _ => {}
        }
    }
    blind
}
