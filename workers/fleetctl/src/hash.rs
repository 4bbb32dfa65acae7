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

pub fn run(file: &Path) -> anyhow::Result<()> {
    let (_, intent) = read_intent(file)?;
    println!("{}", intent.payload_hash);
    Ok(())
}
