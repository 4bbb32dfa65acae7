//! `fleetctl reconcile`: ask reconcile to look at an operation now instead of waiting for
//! the sweeper. (Operator decisions, resolve and dispute, go through the API: `decide`.)

use fleet_broker::{Publisher, Queue};
use fleet_core::{Doorbell, OpKey, OpRef, OperationId};
use fleet_store::Store;

/// The operation `id` names (of `tenant`, when given), read with the owner's connection.
/// Ids are unique per tenant (docs/design.md#tenant-boundaries): an id two tenants hold
/// needs `--tenant`.
pub async fn pick(store: &Store, id: &str, tenant: Option<&str>) -> anyhow::Result<OpKey> {
    OperationId::parse(id).map_err(anyhow::Error::msg)?;
    let holders: Vec<String> = store
        .tenants_of(id)
        .await?
        .into_iter()
        .filter(|t| tenant.is_none_or(|asked| asked == t))
        .collect();
    match holders.as_slice() {
        [] => Err(crate::exit::NotFound(format!("no operation {id}")).into()),
        [one] => Ok(OpKey::new(one.as_str(), id)),
        several => anyhow::bail!(
            "{id} names operations of tenants {}: say which with --tenant",
            several.join(", ")
        ),
    }
}

/// Rings the reconcile doorbell now instead of waiting for the sweeper, for an operation
/// the caller found first (`pick`): an id with no operation behind it is an error there,
/// since the doorbell would be consumed and do nothing, and the operator would believe a
/// lookup was asked for.
pub async fn reconcile(
    publisher: &Publisher,
    op: OpRef<'_>,
    format: crate::args::Format,
) -> anyhow::Result<()> {
    let bell = Doorbell::new(op.tenant_id, op.operation_id);
    publisher
        .publish(Queue::OperationsReconcile, &bell.to_bytes())
        .await?;
    crate::output::result(
        format,
        || serde_json::json!({"operation_id": op.operation_id, "tenant_id": op.tenant_id, "rung": true}),
        || format!("reconcile rung for {}", op.operation_id),
    );
    Ok(())
}
