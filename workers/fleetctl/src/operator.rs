//! `fleetctl reconcile`: ask reconcile to look at an operation now instead of waiting for
//! the sweeper. (Operator decisions, resolve and dispute, go through the API: `decide`.)

use anyhow::bail;
use fleet_broker::{Publisher, Queue};
use fleet_core::{Doorbell, OperationId};
use fleet_store::Store;

/// Rings the reconcile doorbell now instead of waiting for the sweeper. An id with no
/// operation behind it is an error: the doorbell would be consumed and do nothing, and the
/// operator would believe a lookup was asked for.
pub async fn reconcile(store: &Store, publisher: &Publisher, op: &str) -> anyhow::Result<()> {
    let id = OperationId::parse(op).map_err(anyhow::Error::msg)?;
    if store.get(op).await?.is_none() {
        bail!("no operation {op}");
    }
    publisher
        .publish(Queue::OperationsReconcile, &Doorbell::new(&id).to_bytes())
        .await?;
    println!("reconcile rung for {op}");
    Ok(())
}
