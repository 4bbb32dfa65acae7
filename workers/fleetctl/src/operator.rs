//! `fleetctl reconcile`: ask reconcile to look at an operation now instead of waiting for
//! the sweeper. (Operator decisions, resolve and dispute, go through the API: `decide`.)

use fleet_broker::{Publisher, Queue};
use fleet_core::{Doorbell, OpRef};

/// Rings the reconcile doorbell now instead of waiting for the sweeper, for an operation
/// the caller found first (`inspect::pick`): an id with no operation behind it is an
/// error there, since the doorbell would be consumed and do nothing, and the operator
/// would believe a lookup was asked for.
pub async fn reconcile(publisher: &Publisher, op: OpRef<'_>) -> anyhow::Result<()> {
    let bell = Doorbell::new(op.tenant_id, op.operation_id);
    publisher
        .publish(Queue::OperationsReconcile, &bell.to_bytes())
        .await?;
    println!("reconcile rung for {}", op.operation_id);
    Ok(())
}
