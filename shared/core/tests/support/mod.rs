//! What several integration tests of fleet-core read: the intent schema and the intent
//! fixtures.

use std::fs;
use std::path::{Path, PathBuf};

/// `shared/schemas/intent.v1.json`, parsed.
pub fn intent_schema() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/intent.v1.json");
    serde_json::from_str(
        &fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// (file name without `.json`, raw bytes) of every intent fixture in `kind` (`valid`,
/// `invalid`, `strict`), sorted.
pub fn fixtures(kind: &str) -> Vec<(String, Vec<u8>)> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/intents")
        .join(kind);
    let mut out: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}
