//! Approve and reject. Approval is refused unless the hash is the stored snapshot's and
//! the approval is pending and unexpired; the execute bell rings only after the commit.

use fleet_broker::{Publisher, Queue};
use fleet_core::{Doorbell, OperationId};
use fleet_store::{ApprovalOutcome, RejectOutcome, Store};

#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    #[error("no operation {0}")]
    NotFound(String),
    #[error("refused: the hash given is not the stored snapshot's ({stored}); look at `fleetctl show` again")]
    HashMismatch { stored: String },
    #[error("refused: approval is {approval_status} and the operation is {status}")]
    NotPending { approval_status: String, status: String },
    #[error("refused: the approval window has expired; the agent must submit a new intent")]
    Expired,
    #[error(transparent)]
    Store(#[from] fleet_store::StoreError),
}

/// Approves, then rings the execute bell. `Ok(false)` means approved but the bell could
/// not be rung (reconcile's sweeper re-rings approved rows that wait too long).
pub async fn approve_and_ring(store: &Store, publisher: &Publisher, op: &OperationId, hash: &str, by: &str) -> Result<bool, ApproveError> {
    match store.approve(op.as_str(), hash, by).await? {
        ApprovalOutcome::Approved => {}
        ApprovalOutcome::NotFound => return Err(ApproveError::NotFound(op.to_string())),
        ApprovalOutcome::HashMismatch { stored } => return Err(ApproveError::HashMismatch { stored }),
        ApprovalOutcome::NotPending { approval_status, status } => return Err(ApproveError::NotPending { approval_status, status }),
        ApprovalOutcome::Expired => return Err(ApproveError::Expired),
    }
    match publisher.publish(Queue::OperationsExecute, &Doorbell::new(op).to_bytes()).await {
        Ok(()) => Ok(true),
        Err(e) => {
            tracing::warn!(operation_id = %op, error = %e, "approved, but the execute bell could not be rung");
            Ok(false)
        }
    }
}

pub async fn approve(store: &Store, publisher: &Publisher, op: &str, hash: &str, by: &str) -> anyhow::Result<()> {
    let op = OperationId::parse(op).map_err(anyhow::Error::msg)?;
    if approve_and_ring(store, publisher, &op, hash, by).await? {
        println!("approved {op} ({hash}) by {by}");
    } else {
        println!("approved {op} ({hash}) by {by}; the execute bell was not rung, the sweeper will ring it");
    }
    Ok(())
}

pub async fn reject(store: &Store, op: &str, by: &str, reason: &str) -> anyhow::Result<()> {
    match store.reject(op, by, reason).await? {
        RejectOutcome::Rejected => {
            println!("rejected {op} by {by}: cancelled");
            Ok(())
        }
        RejectOutcome::NotFound => anyhow::bail!("no operation {op}"),
        RejectOutcome::TooLate { status } => anyhow::bail!("refused: {op} is {status}; only an operation that has not started can be rejected"),
    }
}
