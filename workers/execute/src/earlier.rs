//! What the operation's earlier attempts recorded: a refusal that an earlier request of
//! ours may explain (`fleet_core::outcome::settle_conflict`) is judged with them.

use fleet_core::{AttemptOutcome, OpRef};
use fleet_store::{ExecuteStore, StoreError};

/// The recorded outcomes of the attempts before the claim at `fence` (`None`: it never
/// finished).
pub(crate) async fn earlier_outcomes(
    store: &ExecuteStore,
    op: OpRef<'_>,
    fence: i64,
) -> Result<Vec<Option<AttemptOutcome>>, StoreError> {
    Ok(store
        .attempts(op)
        .await?
        .iter()
        .filter(|a| a.fence < fence)
        .map(|a| a.outcome)
        .collect())
}
