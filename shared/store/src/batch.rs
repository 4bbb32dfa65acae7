//! Several answers recorded in one transaction and one statement: one commit (one WAL
//! flush, one round trip of BEGIN and one of COMMIT) and one statement's fixed costs
//! (its statement triggers, its executor start-up) for many operations, while each row
//! still moves by its own compare-and-set on status and fence, each attempt row is
//! completed and each event written, exactly as [`Store::transition`] does for one.

use std::future::Future;

use tracing::warn;

use fleet_core::{Refused, Status};

use crate::component::MoveOperations;
use crate::many_rows::columns_of;
use crate::transition::{
    attempt_only_params, bind, outcome_of, update_with_attempt_params, Bound, Param,
    UPDATE_WITH_ATTEMPT_MANY,
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
    /// their outcomes in the order given. The answers go to Postgres in (tenant,
    /// operation id) order as the rows of one statement, [`UPDATE_WITH_ATTEMPT_MANY`]:
    /// the statement [`Store::transition`] sends for a transition with an attempt, over
    /// many rows. It locks the rows it moves in that order (so two such statements never
    /// wait on each other in a cycle) and writes the event rows in that order. A
    /// transition the state machine refuses writes its attempt only. The same operation
    /// answered more than once goes in as many statements, one after the other in the
    /// order given, so each later answer sees what the earlier one did; such a later
    /// statement locks after the first one's rows, so it can close a cycle with another
    /// batch: Postgres then rolls one of them back as a deadlock, and [`settle_batch`]
    /// records its answers one by one. Nothing is lost, only the batch's saving.
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
            .prepare_cached(&UPDATE_WITH_ATTEMPT_MANY)
            .await
            .map_err(|e| rolled_back(e.into()))?;

        let bound: Vec<Result<(Status, Bound), Refused>> =
            items.iter().map(|(t, _)| bind(t)).collect();
        let attempt_outcomes: Vec<&'static str> =
            items.iter().map(|(_, a)| a.outcome.as_str()).collect();
        let params = |i: usize| match &bound[i] {
            Ok((_, b)) => {
                update_with_attempt_params(&items[i].0, b, &attempt_outcomes[i], items[i].1)
            }
            Err(_) => attempt_only_params(&items[i].0, &attempt_outcomes[i], items[i].1),
        };
        let mut outcomes: Vec<TransitionOutcome> = bound
            .iter()
            .map(|b| match b {
                Err(refused) => TransitionOutcome::Refused(*refused),
                Ok(_) => TransitionOutcome::Stale,
            })
            .collect();
        for round in rounds(items) {
            let rows: Vec<[Param<'_>; 27]> = round.iter().map(|&i| params(i)).collect();
            let columns = columns_of(&rows);
            let columns: Vec<Param<'_>> = columns.iter().map(|c| c as Param<'_>).collect();
            let moved = tx
                .query(&update, &columns)
                .await
                .map_err(|e| rolled_back(e.into()))?;
            for row in &moved {
                let n: i64 = row.get("n");
                let i = round[n as usize - 1];
                if let Ok((to, _)) = &bound[i] {
                    outcomes[i] = outcome_of(*to, Some(row));
                }
            }
        }
        tx.commit()
            .await
            .map_err(|e| BatchError::CommitUnknown(e.into()))?;

        for ((t, _), o) in items.iter().zip(&outcomes) {
            o.observe(t.expected);
        }
        Ok(outcomes)
    }
}

/// The items' indexes in (tenant, operation id) order, as statements of distinct
/// operations: the first answer for each operation goes in the first, a second answer for
/// one in the second, and so on (each in the order given).
fn rounds(items: &[(Transition<'_>, &AttemptRecord)]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| items[i].0.op);
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    let mut k = 0;
    for (at, &i) in order.iter().enumerate() {
        k = match at {
            0 => 0,
            _ if items[order[at - 1]].0.op == items[i].0.op => k + 1,
            _ => 0,
        };
        if rounds.len() == k {
            rounds.push(Vec::new());
        }
        rounds[k].push(i);
    }
    rounds
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

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_core::{AttemptOutcome, Event, OpRef};

    #[test]
    fn rounds_sort_by_operation_and_put_a_repeated_operation_in_a_later_statement() {
        let a = AttemptRecord::new(AttemptOutcome::Succeeded);
        let t = |tenant, op| {
            Transition::new(
                OpRef::new(tenant, op),
                Status::InProgress,
                1,
                Event::ProviderSucceeded,
                "execute",
            )
        };
        let items = [
            (t("org_b", "op_1"), &a),
            (t("org_a", "op_2"), &a),
            (t("org_a", "op_1"), &a),
            (t("org_a", "op_2"), &a),
            (t("org_a", "op_2"), &a),
        ];
        assert_eq!(rounds(&items), vec![vec![2, 1, 0], vec![3], vec![4]]);
        assert!(rounds(&items[..0]).is_empty());
    }
}
