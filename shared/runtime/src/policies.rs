//! The quorum policies every intake (prepare, the API) judges by, read once at start. The
//! repository's own (`shared/policies`) are built into the binary, so a binary started
//! anywhere has them; `POLICY_DIR` replaces them with a directory of one's own, each
//! `<policy_version>.toml` one policy (`fleet_core::policy`), and `in-force.toml` which of
//! them is in force by default for an action that several name. A directory that cannot be
//! read, holds no policy, or holds a file that does not parse stops the start, naming the
//! directory and why, since every intent would then be refused or judged by a policy
//! nobody wrote.

use std::path::{Path, PathBuf};

use clap::Args;
use fleet_core::policy::{PolicyError, PolicySet};

#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Directory of quorum policy files, one `<policy_version>.toml` per policy version
    /// (a relative path is taken from the working directory). Unset: the policies built
    /// into the binary (the repository's `shared/policies`).
    #[arg(long, env = "POLICY_DIR")]
    pub policy_dir: Option<PathBuf>,
}

/// The repository's policies, built in: `(policy_version, file text)`. A test checks the
/// list against the directory, so a policy file added there and not here fails the build's
/// tests.
pub const BUILT_IN_POLICIES: [(&str, &str); 10] = [
    ("charges-v1", include_str!("../../policies/charges-v1.toml")),
    ("charges-v2", include_str!("../../policies/charges-v2.toml")),
    (
        "contracts-v1",
        include_str!("../../policies/contracts-v1.toml"),
    ),
    ("crm-v1", include_str!("../../policies/crm-v1.toml")),
    ("in-force", include_str!("../../policies/in-force.toml")),
    ("orders-v1", include_str!("../../policies/orders-v1.toml")),
    (
        "payments-v3",
        include_str!("../../policies/payments-v3.toml"),
    ),
    (
        "payments-v4",
        include_str!("../../policies/payments-v4.toml"),
    ),
    (
        "payments-v5",
        include_str!("../../policies/payments-v5.toml"),
    ),
    ("refunds-v1", include_str!("../../policies/refunds-v1.toml")),
];

/// The policies built into the binary.
pub fn built_in_policies() -> Result<PolicySet, PolicyLoadError> {
    let set = PolicySet::parse(BUILT_IN_POLICIES.iter().copied())?;
    tracing::info!(source = "built in", versions = ?set.versions().collect::<Vec<_>>(), "quorum policies loaded");
    Ok(set)
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
        match &self.policy_dir {
            Some(dir) => load_policies(dir),
            None => built_in_policies(),
        }
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
    fn the_built_in_policies_are_the_repository_directory_exactly() {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir(&shipped)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| {
                (
                    p.file_stem().unwrap().to_str().unwrap().to_owned(),
                    std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect();
        on_disk.sort();
        let built_in: Vec<(String, String)> = BUILT_IN_POLICIES
            .iter()
            .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
            .collect();
        assert_eq!(
            built_in.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            on_disk.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            "BUILT_IN_POLICIES must list every file of shared/policies"
        );
        assert_eq!(built_in, on_disk);
        assert!(built_in_policies().is_ok());
    }

    #[test]
    fn without_a_directory_the_built_in_policies_are_used() {
        let args = PolicyArgs { policy_dir: None };
        assert!(args.load().unwrap().versions().any(|v| v == "payments-v4"));
        let missing = PolicyArgs {
            policy_dir: Some(std::env::temp_dir().join("fleet-policies-nowhere")),
        };
        let err = missing.load().unwrap_err().to_string();
        assert!(err.contains("fleet-policies-nowhere"), "{err}");
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
