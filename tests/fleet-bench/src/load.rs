//! The load: the bench's intents, and the three ways it drives them.
//!
//! - [`prepare_and_approve`] (execute mode, before the workers start): each intent goes
//!   through `Store::insert_prepared` (what fleet-prepare does with a valid intent) and
//!   `Store::approve` (what fleet-api's approve does once the caller is authorized),
//!   without a bell.
//! - [`ring_all`] (execute mode, the measured phase): every execute bell at once, on
//!   `--publishers` connections in parallel.
//! - [`pipeline`]: intents are published to `intents.prepare` (paced by `--rate`), and a
//!   poller finds each prepared operation and hands it to one of `--publishers`
//!   approvers, which do what fleet-api's approve does once the caller is authorized
//!   ([`approve_and_ring`]: `Store::approve`, then the execute bell). The bench measures
//!   the workers, so it leaves the HTTP hop and its authorization out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleet_broker::{Publisher, Queue};
use fleet_core::{parse_intent, Decider, Doorbell, OpRef, SignIn, ValidIntent};
use fleet_store::{ApprovalOutcome, PrepareOutcome, Store};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::sql::BenchSql;

/// The tenant of every operation the bench submits (history rows have others).
pub const TENANT: &str = "org_bench";
pub const APPROVER: &str = "bench-approver";
/// The bench's approver, as its approvals record it.
const BY: Decider<'static> = Decider {
    name: APPROVER,
    signed_in_with: SignIn::Token,
};
/// How often the pipeline's approver looks for newly prepared operations.
const APPROVER_POLL: Duration = Duration::from_millis(5);
/// Upper bound on prepared operations one poll picks up.
const APPROVER_POLL_BATCH: i64 = 10_000;
/// How far before the previous poll a poll looks back: a prepare transaction that
/// stamped `created_at` earlier may commit after that poll ran.
const APPROVER_LOOKBACK: Duration = Duration::from_millis(200);
/// Every this many polls, one looks at every pending row of the bench created since the
/// run began, so a row that committed later than the look-back allows is still approved.
const APPROVER_FULL_SWEEP_EVERY: u32 = 200;
/// How long before the approver starts (by the database clock) the full sweep begins:
/// intents published as it starts are created after that. A seeded history (`--history`,
/// its newest an hour old) lies before it: a sweep from the epoch walked the tenant's
/// million seeded rows for the few pending ones, and the approver stalled behind it.
const APPROVER_SWEEP_MARGIN_S: f64 = 60.0;
/// Concurrent connections of the execute-mode setup.
pub const SETUP_TASKS: usize = 8;

pub struct BenchIntent {
    pub bytes: Vec<u8>,
    pub intent: ValidIntent,
}

/// What the bench itself did to Postgres and RabbitMQ, so it can be told apart from
/// what the fleet did.
#[derive(Debug, Default)]
pub struct BenchTally {
    /// Transactions the bench ran in the bench database (polls, readings) while measured.
    pub xacts: AtomicU64,
    /// Messages the bench published (intents, bells).
    pub published: AtomicU64,
    /// Approvals whose bell could not be rung (the sweeper re-rings those later).
    pub unrung: AtomicU64,
}

impl BenchTally {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// `count` payment intents to healthy beneficiaries (the provider accepts every one).
pub fn intents(count: usize) -> Vec<BenchIntent> {
    let currencies = ["USD", "EUR", "KZT"];
    (0..count)
        .map(|i| {
            let n = i as i64;
            let invoice = format!("inv_b{i}");
            let msg = json!({
                "schema": "intent.v1",
                "operation_id": format!("op_{}", ulid::Ulid::new()),
                "tenant_id": TENANT,
                "action": "payment.create",
                "provider": "payments",
                "target": null,
                "payload": {"invoice_id": invoice, "beneficiary_id": format!("vendor_{}", 1 + i % 9),
                            "amount_minor": 10_000 + (n * 7_919) % 990_000, "currency": currencies[i % 3]},
                "policy_version": "payments-v3",
                "data_version": format!("{invoice}@1"),
                "approval_ttl_seconds": 3600,
                "rationale": "bench",
                "supersedes": null
            });
            let bytes = serde_json::to_vec(&msg).expect("json serialises");
            let intent = parse_intent(&bytes).expect("the bench's intents are valid");
            BenchIntent { bytes, intent }
        })
        .collect()
}

/// Indexes `0..n` dealt round-robin to `k` workers: worker `w` gets `w, w+k, w+2k, …`.
fn dealt(n: usize, k: usize, w: usize) -> impl Iterator<Item = usize> {
    (w..n).step_by(k)
}

async fn join_all(mut set: JoinSet<anyhow::Result<()>>) -> anyhow::Result<()> {
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(())
}

/// Execute-mode setup: insert and approve every intent, no bells.
pub async fn prepare_and_approve(
    store: &Store,
    intents: &Arc<Vec<BenchIntent>>,
) -> anyhow::Result<()> {
    let mut set = JoinSet::new();
    for w in 0..SETUP_TASKS {
        let (store, intents) = (store.clone(), intents.clone());
        set.spawn(async move {
            for i in dealt(intents.len(), SETUP_TASKS, w) {
                let it = &intents[i].intent;
                let inserted = store.insert_prepared(it, 1, None).await?;
                anyhow::ensure!(
                    matches!(inserted, PrepareOutcome::Inserted),
                    "{}: insert_prepared said {inserted:?}",
                    it.operation_id
                );
                let approved = store
                    .approve(
                        OpRef::new(&it.snapshot.tenant_id, it.operation_id.as_str()),
                        it.payload_hash.as_str(),
                        &BY,
                        None,
                    )
                    .await?;
                anyhow::ensure!(
                    approved == ApprovalOutcome::Approved,
                    "{}: approve said {approved:?}",
                    it.operation_id
                );
            }
            Ok(())
        });
    }
    join_all(set).await
}

/// Rings every execute bell, `publishers.len()` in flight at a time. Returns when each
/// bell was handed to the broker (just before its publish), by operation.
pub async fn ring_all(
    publishers: &[Publisher],
    intents: &Arc<Vec<BenchIntent>>,
    tally: &Arc<BenchTally>,
) -> anyhow::Result<Vec<(String, DateTime<Utc>)>> {
    let k = publishers.len();
    let mut set = JoinSet::new();
    for (w, publisher) in publishers.iter().enumerate() {
        let (publisher, intents, tally) = (publisher.clone(), intents.clone(), tally.clone());
        set.spawn(async move {
            let mut rung = Vec::with_capacity(intents.len() / k + 1);
            for i in dealt(intents.len(), k, w) {
                let it = &intents[i].intent;
                let op = &it.operation_id;
                let at = Utc::now();
                let bell = Doorbell::new(&it.snapshot.tenant_id, op.as_str());
                publisher
                    .publish(Queue::OperationsExecute, &bell.to_bytes())
                    .await?;
                tally.published.fetch_add(1, Ordering::Relaxed);
                rung.push((op.as_str().to_owned(), at));
            }
            anyhow::Ok(rung)
        });
    }
    let mut all = Vec::with_capacity(intents.len());
    while let Some(r) = set.join_next().await {
        all.extend(r??);
    }
    Ok(all)
}

/// What the pipeline's load side did.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct PipelineLoad {
    /// From the first submit to the last confirmed one.
    pub submit_s: f64,
    pub submit_rate: f64,
    /// From the first submit to the last approval.
    pub approve_s: f64,
}

/// Execute mode: the setup's events (prepared, approved) belong to the setup, so they are
/// marked published before the workers start; the relay's part of the window is then the
/// execute phase's own events.
pub async fn mark_setup_events_published(sql: &BenchSql) -> anyhow::Result<()> {
    sql.client()
        .await?
        .execute(
            "UPDATE operation_outbox SET published_at = now() WHERE published_at IS NULL",
            &[],
        )
        .await?;
    Ok(())
}

/// Publishes every intent (at `rate` per second if given) and approves each once
/// prepared. Returns when every intent is submitted and approved.
pub async fn pipeline(
    store: &Store,
    sql: &BenchSql,
    submitters: &[Publisher],
    approvers: &[Publisher],
    intents: &Arc<Vec<BenchIntent>>,
    rate: Option<f64>,
    tally: &Arc<BenchTally>,
) -> anyhow::Result<PipelineLoad> {
    let start = Instant::now();
    let submit = tokio::spawn(submit_all(
        submitters.to_vec(),
        intents.clone(),
        rate,
        tally.clone(),
    ));
    approve_as_prepared(store, sql, approvers, intents, tally).await?;
    let approve_s = start.elapsed().as_secs_f64();
    let submit_s = submit.await??;
    Ok(PipelineLoad {
        submit_s,
        submit_rate: intents.len() as f64 / submit_s.max(1e-9),
        approve_s,
    })
}

async fn submit_all(
    publishers: Vec<Publisher>,
    intents: Arc<Vec<BenchIntent>>,
    rate: Option<f64>,
    tally: Arc<BenchTally>,
) -> anyhow::Result<f64> {
    let start = Instant::now();
    let k = publishers.len();
    let mut set = JoinSet::new();
    for (w, publisher) in publishers.into_iter().enumerate() {
        let (intents, tally) = (intents.clone(), tally.clone());
        set.spawn(async move {
            for i in dealt(intents.len(), k, w) {
                if let Some(rate) = rate {
                    // Behind schedule, it publishes at once: the achieved rate is reported.
                    tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate))
                        .await;
                }
                publisher
                    .publish(Queue::IntentsPrepare, &intents[i].bytes)
                    .await?;
                tally.published.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        });
    }
    join_all(set).await?;
    Ok(start.elapsed().as_secs_f64())
}

/// Approves as the bench's approver, then rings the execute bell: `Ok(false)` when the
/// bell could not be rung (reconcile's sweeper rings it later).
async fn approve_and_ring(
    store: &Store,
    publisher: &Publisher,
    op: OpRef<'_>,
    hash: &str,
) -> anyhow::Result<bool> {
    let approved = store.approve(op, hash, &BY, None).await?;
    anyhow::ensure!(
        approved == ApprovalOutcome::Approved,
        "{op}: approve said {approved:?}"
    );
    let bell = Doorbell::new(op.tenant_id, op.operation_id);
    Ok(publisher
        .publish(Queue::OperationsExecute, &bell.to_bytes())
        .await
        .is_ok())
}

/// The approver: polls for prepared, pending operations of the bench and deals each to
/// one of the approver tasks, which approve the hash the bench computed itself.
async fn approve_as_prepared(
    store: &Store,
    sql: &BenchSql,
    approvers: &[Publisher],
    intents: &Arc<Vec<BenchIntent>>,
    tally: &Arc<BenchTally>,
) -> anyhow::Result<()> {
    let index: HashMap<String, usize> = intents
        .iter()
        .enumerate()
        .map(|(i, b)| (b.intent.operation_id.as_str().to_owned(), i))
        .collect();
    let mut set = JoinSet::new();
    let mut lanes = Vec::new();
    for publisher in approvers {
        let (tx, mut rx) = mpsc::unbounded_channel::<usize>();
        lanes.push(tx);
        let (store, publisher, intents, tally) = (
            store.clone(),
            publisher.clone(),
            intents.clone(),
            tally.clone(),
        );
        set.spawn(async move {
            while let Some(i) = rx.recv().await {
                let it = &intents[i].intent;
                let rung = approve_and_ring(
                    &store,
                    &publisher,
                    OpRef::new(&it.snapshot.tenant_id, it.operation_id.as_str()),
                    it.payload_hash.as_str(),
                )
                .await?;
                if rung {
                    tally.published.fetch_add(1, Ordering::Relaxed);
                } else {
                    tally.unrung.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(())
        });
    }
    let mut dealt_out = vec![false; intents.len()];
    let mut remaining = intents.len();
    let mut next_lane = 0;
    // Each poll reads only the rows created since shortly before the previous one (by the
    // database clock, through the tenant's `created_at` index), not the whole backlog of
    // rows already dealt out and still waiting for their approver: that re-read cost more
    // Postgres CPU than the fleet's own work per operation.
    let lookback_ms = APPROVER_LOOKBACK.as_millis() as f64;
    let run_began: DateTime<Utc> = sql
        .client()
        .await?
        .query_one(
            "SELECT /* fleet-bench */ now() - make_interval(secs => $1)",
            &[&APPROVER_SWEEP_MARGIN_S],
        )
        .await?
        .get(0);
    // One connection polls, its statement prepared once, with bitmap scans off. With
    // them the planner ANDed the tenant's `created_at` range with the partial index of
    // not-started rows, which keeps an entry for every row the run has approved (nothing
    // vacuums it): each poll, 200 a second, read them all (7,500 by the end of a run), a
    // cost that grew with the run rather than with what had just been prepared. An index
    // scan reads the range alone.
    let poller = sql.client().await?;
    poller.batch_execute("SET enable_bitmapscan = off").await?;
    let poll = poller
        .prepare(
            "SELECT /* fleet-bench */ operation_id,
                    now() - make_interval(secs => $4::float8 / 1000.0) AS next_since
               FROM operations
              WHERE tenant_id = $1 AND created_at > $3
                AND status = 'not_started' AND approval_status = 'pending'
              LIMIT $2",
        )
        .await?;
    let mut since: Option<DateTime<Utc>> = None;
    let mut polls = 0u32;
    while remaining > 0 {
        polls = polls.wrapping_add(1);
        // The full sweep looks from the run's beginning: one statement either way, whose
        // range on `created_at` the index answers (`$3 IS NULL OR …` could not be).
        let window = match since {
            Some(t) if !polls.is_multiple_of(APPROVER_FULL_SWEEP_EVERY) => t,
            _ => run_began,
        };
        let rows = poller
            .query(
                &poll,
                &[&TENANT, &APPROVER_POLL_BATCH, &window, &lookback_ms],
            )
            .await?;
        tally.xacts.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = rows.first() {
            since = Some(r.get("next_since"));
        }
        for r in rows {
            let id: String = r.get(0);
            let Some(&i) = index.get(&id) else { continue };
            if !std::mem::replace(&mut dealt_out[i], true) {
                remaining -= 1;
                // A closed lane means its task failed: reported just below.
                let _ = lanes[next_lane].send(i);
                next_lane = (next_lane + 1) % lanes.len();
            }
        }
        // An approver ends before its lane is closed only when it failed.
        if let Some(r) = set.try_join_next() {
            r??;
            anyhow::bail!("an approver stopped early");
        }
        tokio::time::sleep(APPROVER_POLL).await;
    }
    poller.batch_execute("RESET enable_bitmapscan").await?;
    drop(poller);
    drop(lanes);
    join_all(set).await
}
