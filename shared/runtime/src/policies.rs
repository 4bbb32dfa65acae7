//! `POLICY_DIR`: where the quorum policies are, read once at start by every intake
//! (prepare, the API). Each `<policy_version>.toml` in the directory is one policy
//! (`fleet_core::policy`); a directory that cannot be read, holds no policy, or holds a
//! file that does not parse stops the start, since every intent would then be refused or
//! judged by a policy nobody wrote.

use std::path::{Path, PathBuf};

use clap::Args;
use fleet_core::policy::{PolicyError, PolicySet};

#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Directory of quorum policy files, one `<policy_version>.toml` per policy version
    /// (a relative path is taken from the working directory).
    #[arg(long, env = "POLICY_DIR", default_value = "shared/policies")]
    pub policy_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyLoadError {
    #[error("reading the policy directory {dir}: {source}")]
    Read {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("the policy directory {0} holds no <policy_version>.toml file")]
    Empty(PathBuf),
    #[error(transparent)]
    Invalid(#[from] PolicyError),
}

/// Every policy in `dir` (its `*.toml` files; nothing else is read).
pub fn load_policies(dir: &Path) -> Result<PolicySet, PolicyLoadError> {
    let read = |source| PolicyLoadError::Read {
        dir: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.extension().is_none_or(|e| e != "toml") || !path.is_file() {
            continue;
        }
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        files.push((
            stem.to_owned(),
            std::fs::read_to_string(&path).map_err(read)?,
        ));
    }
    if files.is_empty() {
        return Err(PolicyLoadError::Empty(dir.to_owned()));
    }
    let set = PolicySet::parse(files.iter().map(|(n, t)| (n.as_str(), t.as_str())))?;
    tracing::info!(dir = %dir.display(), versions = ?set.versions().collect::<Vec<_>>(), "quorum policies loaded");
    Ok(set)
}

impl PolicyArgs {
    pub fn load(&self) -> Result<PolicySet, PolicyLoadError> {
        load_policies(&self.policy_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fleet-policies-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_repository_policies_load_and_other_files_are_ignored() {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
        let set = load_policies(&shipped).unwrap();
        assert!(set.versions().any(|v| v == "payments-v3"));

        let dir = scratch("mixed");
        std::fs::write(
            dir.join("p1.toml"),
            "policy_version = \"p1\"\n[actions.\"refund.create\"]\napprovers = 1\n",
        )
        .unwrap();
        std::fs::write(dir.join("README.md"), "not a policy").unwrap();
        let set = load_policies(&dir).unwrap();
        assert_eq!(set.versions().collect::<Vec<_>>(), ["p1"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_empty_or_broken_directory_stops_the_start() {
        let missing = std::env::temp_dir().join("fleet-policies-that-do-not-exist");
        assert!(matches!(
            load_policies(&missing),
            Err(PolicyLoadError::Read { .. })
        ));
        let empty = scratch("empty");
        assert!(matches!(
            load_policies(&empty),
            Err(PolicyLoadError::Empty(_))
        ));
        std::fs::write(
            empty.join("p2.toml"),
            "policy_version = \"other\"\n[actions.\"refund.create\"]\napprovers = 1\n",
        )
        .unwrap();
        let err = load_policies(&empty).unwrap_err();
        assert!(err.to_string().contains("policy p2"), "{err}");
        std::fs::remove_dir_all(&empty).unwrap();
    }
}
