//! `fleetctl submit FILE`: what an agent does, from the command line.

use std::path::Path;

use anyhow::Context;
use fleet_broker::{BrokerConfig, Publisher, Queue};
use serde_json::json;

use crate::args::Format;
use crate::output;

/// `fleetctl supersede OP --file NEW`: submits the corrected intent as the replacement of
/// OP (its `supersedes` is set to OP). prepare cancels OP if it never executed, or refuses
/// the correction if it did or might have; the new operation needs its own approval.
pub async fn supersede(
    broker: &BrokerConfig,
    old: &str,
    file: &Path,
    format: Format,
) -> anyhow::Result<()> {
    let old = fleet_core::OperationId::parse(old).map_err(anyhow::Error::msg)?;
    let raw = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let mut message: serde_json::Value =
        serde_json::from_slice(&raw).with_context(|| format!("{} is not JSON", file.display()))?;
    message["supersedes"] = serde_json::json!(old.as_str());
    let bytes = serde_json::to_vec(&message)?;
    let intent = fleet_core::parse_intent(&bytes)
        .map_err(|e| anyhow::anyhow!("not a valid intent.v1 ({}): {e}", e.code()))?;
    let publisher = Publisher::connect(broker).await?;
    publisher.publish(Queue::IntentsPrepare, &bytes).await?;
    publisher.close().await;
    output::result(
        format,
        || json!({"operation_id": intent.operation_id.as_str(), "payload_hash": intent.payload_hash.as_str(), "supersedes": old.as_str()}),
        || {
            format!(
                "submitted {} {} superseding {old}; approve the new hash to proceed",
                intent.operation_id, intent.payload_hash
            )
        },
    );
    Ok(())
}

pub async fn run(broker: &BrokerConfig, file: &Path, format: Format) -> anyhow::Result<()> {
    // Refuse locally what prepare would dead-letter: the person at the terminal learns why now.
    let (bytes, intent) = crate::hash::read_intent(file)?;
    let publisher = Publisher::connect(broker).await?;
    publisher.publish(Queue::IntentsPrepare, &bytes).await?;
    publisher.close().await;
    output::result(
        format,
        || json!({"operation_id": intent.operation_id.as_str(), "payload_hash": intent.payload_hash.as_str()}),
        || format!("submitted {} {}", intent.operation_id, intent.payload_hash),
    );
    Ok(())
}
