//! `fleetctl reconcile`: ask reconcile to look at an operation now instead of waiting for
//! the sweeper. (Operator decisions, resolve and dispute, go through the API: `decide`.)

use fleet_broker::{Publisher, Queue};
use fleet_core::{Doorbell, OperationId};

/// Rings the reconcile doorbell now instead of waiting for the sweeper.
pub async fn reconcile(publisher: &Publisher, op: &str) -> anyhow::Result<()> {
    let id = OperationId::parse(op).map_err(anyhow::Error::msg)?;
    publisher.publish(Queue::OperationsReconcile, &Doorbell::new(&id).to_bytes()).await?;
    println!("reconcile rung for {op}");
    Ok(())
}
