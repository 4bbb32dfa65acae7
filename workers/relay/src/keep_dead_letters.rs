//! Moves dead letters from the broker into Postgres, where operators list, read, replay
//! and discard them (`/v1/dead-letters`, `fleetctl dead-letters`) without the broker:
//! reading a message there again and again would count against its delivery limit.
//!
//! Each message is taken unacked, kept through the owner's function (`ON CONFLICT DO
//! NOTHING` on its key: its message id, else a SHA-256 of queue, body and headers), and
//! acked only after that commit. A relay killed in between leaves it on the broker; the
//! next take keeps it once more under the same key, which stores nothing new.

use std::time::Duration;

use chrono::{DateTime, Utc};
use fleet_broker::{DeadLetterReader, Publisher, Queue, TakenDeadLetter};
use fleet_runtime::metric_names as m;
use fleet_runtime::Ticker;
use fleet_store::{NewDeadLetter, RelayStore};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::pause;

/// How often the dead-letter queues are emptied into Postgres.
pub const KEEP_EVERY: Duration = Duration::from_secs(1);
/// Most messages one look takes from one queue, so one busy queue does not hold the others.
const MAX_PER_LOOK: usize = 100;

pub async fn run(store: RelayStore, publisher: Publisher, shutdown: CancellationToken) {
    let mut ticker = Ticker::new(KEEP_EVERY, shutdown);
    while ticker.tick().await {
        let reader = match publisher.dead_letter_reader().await {
            Ok(Some(reader)) => reader,
            // Not connected now: the publisher's watcher reconnects it.
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "could not open a channel to take dead letters");
                continue;
            }
        };
        if let Err(e) = keep_all(&store, &reader).await {
            tracing::warn!(error = %e, "could not keep the dead letters; they stay on the broker");
        }
        reader.close().await;
        match store.unresolved_dead_letters().await {
            Ok(counts) => {
                for q in Queue::ALL {
                    let n = counts
                        .iter()
                        .find(|(name, _)| name == q.wire_name())
                        .map_or(0, |(_, n)| *n);
                    metrics::gauge!(m::DEAD_LETTERS_KEPT, "queue" => q.wire_name()).set(n as f64);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not count the kept dead letters"),
        }
    }
}

async fn keep_all(store: &RelayStore, reader: &DeadLetterReader) -> anyhow::Result<()> {
    for queue in Queue::ALL {
        for _ in 0..MAX_PER_LOOK {
            let Some(taken) = reader.take(queue).await? else {
                break;
            };
            let id = store
                .keep_dead_letter(&new_dead_letter(&taken, &key(&taken)))
                .await?;
            pause::point(pause::AFTER_KEEP).await;
            tracing::info!(
                dead_letter_id = id,
                queue = queue.wire_name(),
                reason = taken.reason.as_deref().unwrap_or(""),
                "dead letter kept"
            );
            taken.ack().await?;
        }
    }
    Ok(())
}

fn new_dead_letter<'a>(t: &'a TakenDeadLetter, key: &'a str) -> NewDeadLetter<'a> {
    let headers: serde_json::Map<String, serde_json::Value> = t
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    NewDeadLetter {
        queue: t.queue.wire_name(),
        body: &t.body,
        headers: serde_json::Value::Object(headers),
        user_id: t.user_id.as_deref(),
        reason: t.reason.as_deref(),
        dead_lettered_at: t
            .dead_lettered_at_s
            .and_then(|s| DateTime::<Utc>::from_timestamp(s, 0)),
        dedup_key: key,
    }
}

/// The message id when the publisher gave one (every fleet publisher does), else a digest
/// of what the message is.
fn key(t: &TakenDeadLetter) -> String {
    if let Some(id) = t.message_id.as_deref().filter(|id| !id.is_empty()) {
        return format!("{}/id:{id}", t.queue.wire_name());
    }
    let mut h = Sha256::new();
    h.update(t.queue.wire_name().as_bytes());
    h.update([0]);
    h.update(&t.body);
    for (k, v) in &t.headers {
        h.update([0]);
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.as_bytes());
    }
    format!("{}/sha256:{:x}", t.queue.wire_name(), h.finalize())
}
