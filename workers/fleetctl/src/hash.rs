//! `fleetctl hash FILE`: the payload hash of an intent.v1 file, computed exactly as
//! prepare computes it, so an approver (or an agent) can check what they approve.

use std::path::Path;

use anyhow::Context;
use fleet_core::{parse_intent, ValidIntent};

pub fn read_intent(file: &Path) -> anyhow::Result<(Vec<u8>, ValidIntent)> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let intent = parse_intent(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "{} is not a valid intent.v1 ({}): {e}",
            file.display(),
            e.code()
        )
    })?;
    Ok((bytes, intent))
}

/// Prints the hash alone (`$(fleetctl hash f.json)`), or with `-o json`
/// `{"operation_id", "payload_hash"}`.
pub fn run(file: &Path, format: crate::args::Format) -> anyhow::Result<()> {
    let (_, intent) = read_intent(file)?;
    crate::output::result(
        format,
        || serde_json::json!({"operation_id": intent.operation_id.as_str(), "payload_hash": intent.payload_hash.as_str()}),
        || intent.payload_hash.to_string(),
    );
    Ok(())
}
