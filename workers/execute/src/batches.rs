//! The claims, send marks and answers of concurrent handlers, each sent to Postgres in
//! batches: the doorbells that overlap in time are claimed by one statement, the send
//! marks that overlap in time are committed by one statement, and the answers that
//! overlap in time are recorded by one statement in one transaction. A lone doorbell or answer goes out at
//! once (see `fleet_runtime::batch`): batching saves work under load and never adds a wait
//! at low load. Every row still moves by its own compare-and-set and gets its own attempt
//! and event rows; a handler acks its doorbell only after the commit its answer was part of.

use std::collections::HashMap;

use fleet_core::{OpKey, OpRef};
use fleet_runtime::Batcher;
use fleet_store::{
    settle_batch, AttemptRecord, Claim, ExecuteStore, StoreError, Transition, TransitionOutcome,
};
use tracing::warn;

use crate::answer::{transition_of, Answer};
use crate::settings::ExecuteSettings;

/// Most doorbells one claim statement takes, and most answers one transaction records.
const MAX_BATCH: usize = 64;
/// Batches of each kind running at once. One: a request that arrives while a batch is in
/// Postgres leaves with the next one, so a request waits at most for one batch ahead of
/// it. A claim statement costs Postgres a large fixed part whatever its size (its trigger
/// conditions and CHECK constraints are prepared again for every statement, and it writes
/// three tables), so two half-size batches at once cost far more than one: measured with
/// `fleet-bench --baseline-bin`, two in flight made 2.7 times as many commits per
/// operation and 1.6 times the Postgres CPU (docs/benchmark.md).
const IN_FLIGHT: usize = 1;

/// `None`: the batch failed; the doorbell's operation is claimed on its own.
type ClaimResult = Option<Claim>;
/// Whether the mark was written; `None`: the batch failed, the mark is written on its own.
type MarkResult = Option<bool>;
type RecordResult = Result<TransitionOutcome, StoreError>;

pub(crate) struct Batches {
    claims: Batcher<OpKey, ClaimResult>,
    marks: Batcher<(OpKey, i64), MarkResult>,
    records: Batcher<Answer, RecordResult>,
}

impl Batches {
    /// Spawns the two batching tasks (on the current runtime).
    pub fn spawn(
        store: &ExecuteStore,
        policies: Vec<String>,
        owner: String,
        settings: &ExecuteSettings,
    ) -> Batches {
        let (lease_ttl_ms, accepted_deadline_s) =
            (settings.lease_ttl_ms, settings.accepted_deadline_s);
        let claim_store = store.clone();
        let claims = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |ids: Vec<OpKey>| {
            let (store, policies, owner) = (claim_store.clone(), policies.clone(), owner.clone());
            async move { claim_batch(&store, &ids, &policies, &owner, lease_ttl_ms).await }
        });
        let mark_store = store.clone();
        let marks = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |claims: Vec<(OpKey, i64)>| {
            let store = mark_store.clone();
            async move { mark_batch(&store, &claims).await }
        });
        let record_store = store.clone();
        let records = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |answers: Vec<Answer>| {
            let store = record_store.clone();
            async move { record_batch(&store, &answers, accepted_deadline_s).await }
        });
        Batches {
            claims,
            marks,
            records,
        }
    }

    /// Claims `op` with the claims that overlap it. `None`: the batch failed.
    pub async fn claim(&self, op: OpRef<'_>) -> ClaimResult {
        self.claims.submit(op.to_key()).await.flatten()
    }

    /// Commits the send mark of `op`'s claim at `fence` with the marks that overlap it:
    /// `true` once it is written, `false` when the claim ended first (nothing may be sent).
    pub async fn mark_sent(
        &self,
        store: &ExecuteStore,
        op: OpRef<'_>,
        fence: i64,
    ) -> Result<bool, StoreError> {
        match self.marks.submit((op.to_key(), fence)).await.flatten() {
            Some(marked) => Ok(marked),
            None => store.mark_request_sent(op, fence).await,
        }
    }

    /// Records `answer` in one transaction with the answers that overlap it.
    pub async fn record(&self, answer: Answer) -> RecordResult {
        self.records.submit(answer).await.unwrap_or_else(|| {
            Err(StoreError::Batched(
                "the answer's batch ended without a result".into(),
            ))
        })
    }
}

async fn claim_batch(
    store: &ExecuteStore,
    ids: &[OpKey],
    policies: &[String],
    owner: &str,
    lease_ttl_ms: i64,
) -> Vec<ClaimResult> {
    let refs: Vec<OpRef<'_>> = ids.iter().map(OpKey::op).collect();
    match store
        .claim_ready_many(&refs, policies, owner, lease_ttl_ms)
        .await
    {
        Ok(claimed) => {
            let mut by_id: HashMap<OpKey, _> = claimed
                .into_iter()
                .map(|c| (c.row.key().to_key(), c))
                .collect();
            // The same operation twice in a batch (a redelivered doorbell) is claimed once:
            // the first asker gets the claim, the other reads the row like any loser.
            ids.iter()
                .map(|id| {
                    Some(
                        by_id
                            .remove(id)
                            .map_or(Claim::NotClaimable, |c| Claim::Claimed(Box::new(c))),
                    )
                })
                .collect()
        }
        Err(e) => {
            warn!(error = %e, batch = ids.len(), "batched claim failed; each operation is claimed on its own");
            ids.iter().map(|_| None).collect()
        }
    }
}

async fn mark_batch(store: &ExecuteStore, claims: &[(OpKey, i64)]) -> Vec<MarkResult> {
    let refs: Vec<(OpRef<'_>, i64)> = claims.iter().map(|(k, f)| (k.op(), *f)).collect();
    match store.mark_requests_sent(&refs).await {
        Ok(marked) => claims.iter().map(|c| Some(marked.contains(c))).collect(),
        Err(e) => {
            warn!(error = %e, batch = claims.len(), "batched send mark failed; each mark is written on its own");
            claims.iter().map(|_| None).collect()
        }
    }
}

async fn record_batch(
    store: &ExecuteStore,
    answers: &[Answer],
    accepted_deadline_s: u32,
) -> Vec<RecordResult> {
    let items: Vec<(Transition<'_>, &AttemptRecord)> = answers
        .iter()
        .map(|a| (transition_of(a, accepted_deadline_s), &a.attempt))
        .collect();
    let recorded = store.transition_many(&items).await;
    settle_batch(recorded, &items, |(t, attempt)| {
        store.transition(t.clone(), Some(attempt))
    })
    .await
}
