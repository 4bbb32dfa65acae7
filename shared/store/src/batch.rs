//! Several answers recorded in one transaction: one commit (one WAL flush, one round trip
//! of BEGIN and one of COMMIT) for many operations, while each row still moves by its own
//! compare-and-set on status and fence, each attempt row is completed and each event
//! written, exactly as [`Store::transition`] does for one.

use std::future::Future;

use futures_util::future::try_join_all;
use tracing::warn;

use fleet_core::{Refused, Status};

use crate::component::MoveOperations;
use crate::transition::{
    attempt_params, bind, outcome_of, update_with_attempt_params, Bound, Param, RECORD_ATTEMPT,
    UPDATE_WITH_ATTEMPT,
};
use crate::StoreAs;
use crate::{AttemptRecord, StoreError, Transition, TransitionOutcome};

/// Why [`Store::transition_many`] recorded nothing it can vouch for.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A statement failed before the commit was asked for: the transaction rolled back
    /// and nothing was written. Each answer may be recorded on its own.
    #[error("rolled back: {0}")]
    RolledBack(StoreError),
    /// The commit itself failed (the connection broke, the server stopped): whether it
    /// happened is unknown, as for any single transaction whose COMMIT got no answer.
    #[error("commit unconfirmed: {0}")]
    CommitUnknown(StoreError),
}

impl<R: MoveOperations> StoreAs<R> {
    /// Applies each transition with its attempt, all in one transaction, and returns
    /// their outcomes in the order given. Every statement is the one
    /// [`Store::transition`] sends for a transition with an attempt, all sent pipelined
    /// in (tenant, operation id) order (so two such transactions always lock rows in the same order
    /// and never wait on each other in a cycle). A transition the state machine refuses
    /// writes its attempt only.
    pub async fn transition_many(
        &self,
        items: &[(Transition<'_>, &AttemptRecord)],
    ) -> Result<Vec<TransitionOutcome>, BatchError> {
        let rolled_back = BatchError::RolledBack;
        let mut client = self.client().await.map_err(rolled_back)?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| rolled_back(e.into()))?;
        let update = tx
            .prepare_cached(UPDATE_WITH_ATTEMPT)
            .await
            .map_err(|e| rolled_back(e.into()))?;
        let record = tx
            .prepare_cached(RECORD_ATTEMPT)
            .await
            .map_err(|e| rolled_back(e.into()))?;

        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| items[i].0.op);
        let bound: Vec<Result<(Status, Bound), Refused>> =
            items.iter().map(|(t, _)| bind(t)).collect();
        let attempt_outcomes: Vec<&'static str> =
            items.iter().map(|(_, a)| a.outcome.as_str()).collect();
        // A transition the state machine refuses completes its attempt only.
        let (moves, refusals): (Vec<usize>, Vec<usize>) =
            order.into_iter().partition(|&i| bound[i].is_ok());
        let move_params: Vec<[Param<'_>; 27]> = moves
            .iter()
            .filter_map(|&i| {
                bound[i].as_ref().ok().map(|(_, b)| {
                    update_with_attempt_params(&items[i].0, b, &attempt_outcomes[i], items[i].1)
                })
            })
            .collect();
        let refusal_params: Vec<[Param<'_>; 10]> = refusals
            .iter()
            .map(|&i| {
                attempt_params(
                    &items[i].0.op,
                    &items[i].0.fence,
                    &attempt_outcomes[i],
                    items[i].1,
                )
            })
            .collect();

        let sent_moves = try_join_all(move_params.iter().map(|p| tx.query_opt(&update, p)));
        let sent_refusals = try_join_all(refusal_params.iter().map(|p| tx.execute(&record, p)));
        let (moved, _) =
            tokio::try_join!(sent_moves, sent_refusals).map_err(|e| rolled_back(e.into()))?;
        tx.commit()
            .await
            .map_err(|e| BatchError::CommitUnknown(e.into()))?;

        let mut outcomes: Vec<TransitionOutcome> = bound
            .iter()
            .map(|b| match b {
                Err(refused) => TransitionOutcome::Refused(*refused),
                Ok(_) => TransitionOutcome::Stale,
            })
            .collect();
        for (&i, row) in moves.iter().zip(&moved) {
            if let Ok((to, _)) = &bound[i] {
                outcomes[i] = outcome_of(*to, row.as_ref());
            }
        }
        for ((t, _), o) in items.iter().zip(&outcomes) {
            o.observe(t.expected);
        }
        Ok(outcomes)
    }
}

/// What each request of a batch gets: its outcome; after a rollback, the outcome of doing
/// it alone (so one request Postgres refuses, or a deadlock, does not hold back the
/// others); after an unconfirmed commit, that error, as the caller of a single
/// transaction would get it.
pub async fn settle_batch<T, R, F, Fut>(
    result: Result<Vec<R>, BatchError>,
    items: &[T],
    alone: F,
) -> Vec<Result<R, StoreError>>
where
    F: Fn(&T) -> Fut,
    Fut: Future<Output = Result<R, StoreError>>,
{
    match result {
        Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
        Err(BatchError::RolledBack(e)) if items.len() == 1 => vec![Err(e)],
        Err(BatchError::RolledBack(e)) => {
            warn!(error = %e, batch = items.len(), "batch rolled back; each request is done on its own");
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(alone(item).await);
            }
            out
        }
        Err(BatchError::CommitUnknown(e)) => {
            let e = e.to_string();
            items
                .iter()
                .map(|_| Err(StoreError::Batched(e.clone())))
                .collect()
        }
    }
}
