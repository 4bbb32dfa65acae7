//! The deployment's evidence key: the Ed25519 key evidence bundles are signed with
//! (`EVIDENCE_KEY_FILE`, written by `fleetctl key generate`), and the public keys of the
//! keys it replaced (`EVIDENCE_PUBLIC_KEYS_DIR`), kept published so that a bundle signed
//! years ago still names a key the deployment vouches for.
//!
//! The private key file is read only when nobody but its owner may read or write it, as
//! fleetctl reads an approver's key: a key another user of the machine can read is a key
//! they can sign bundles with. A file refused, unreadable or holding no key stops the start
//! with its name and the fix; without `EVIDENCE_KEY_FILE` the API starts, and its evidence
//! route answers 503 `evidence_key_not_configured`.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use clap::Args;
use fleet_core::{ApproverKey, PublicKey};

#[derive(Debug, Clone, Default, Args)]
pub struct EvidenceKeySettings {
    /// The deployment's evidence key: a file holding the Ed25519 private key evidence
    /// bundles are signed with (`fleetctl key generate --out PATH` writes one), readable
    /// by its owner only. Without it `GET /v1/operations/{id}/evidence` answers 503.
    #[arg(long, env = "EVIDENCE_KEY_FILE")]
    pub evidence_key_file: Option<PathBuf>,

    /// A directory of the public keys of earlier evidence keys (`*.pub`, one key each, as
    /// `fleetctl key generate` writes PATH.pub), published with the current one by
    /// `GET /v1/evidence-keys` so that bundles they signed keep verifying.
    #[arg(long, env = "EVIDENCE_PUBLIC_KEYS_DIR")]
    pub evidence_public_keys_dir: Option<PathBuf>,
}

/// One published evidence key.
#[derive(Debug, Clone)]
pub struct PublishedKey {
    pub key: PublicKey,
    /// When its file was last written: for the current key, when it was generated.
    pub since: Option<DateTime<Utc>>,
    /// Whether it signs the bundles made now.
    pub current: bool,
}

/// The key bundles are signed with, if any, and every key published.
#[derive(Debug, Default)]
pub struct EvidenceKeys {
    signing: Option<ApproverKey>,
    published: Vec<PublishedKey>,
}

/// The permission bits of group and others.
const OPEN_TO_OTHERS: u32 = 0o077;

impl EvidenceKeys {
    /// Reads the settings' files; `Err` says which file and why, never its content.
    pub fn load(settings: &EvidenceKeySettings) -> Result<EvidenceKeys, String> {
        let mut keys = EvidenceKeys::default();
        if let Some(path) = &settings.evidence_key_file {
            let (key, since) = read_private(path)?;
            keys.published.push(PublishedKey {
                key: key.public_key(),
                since,
                current: true,
            });
            keys.signing = Some(key);
        }
        if let Some(dir) = &settings.evidence_public_keys_dir {
            for earlier in read_public_dir(dir)? {
                if !keys.published.iter().any(|p| p.key == earlier.key) {
                    keys.published.push(earlier);
                }
            }
        }
        Ok(keys)
    }

    /// The key bundles are signed with now.
    pub fn signing(&self) -> Option<&ApproverKey> {
        self.signing.as_ref()
    }

    /// The current key first, then the earlier ones by id.
    pub fn published(&self) -> &[PublishedKey] {
        &self.published
    }

    /// Keys as a test holds them.
    pub fn of(signing: Option<ApproverKey>) -> EvidenceKeys {
        let published = signing
            .iter()
            .map(|k| PublishedKey {
                key: k.public_key(),
                since: None,
                current: true,
            })
            .collect();
        EvidenceKeys { signing, published }
    }
}

fn modified(file: &File) -> Option<DateTime<Utc>> {
    file.metadata()
        .and_then(|m| m.modified())
        .ok()
        .map(|t: SystemTime| DateTime::<Utc>::from(t))
}

fn read_private(path: &Path) -> Result<(ApproverKey, Option<DateTime<Utc>>), String> {
    let shown = path.display();
    let mut file =
        File::open(path).map_err(|e| format!("EVIDENCE_KEY_FILE {shown} cannot be read: {e}"))?;
    let metadata = file
        .metadata()
        .map_err(|e| format!("EVIDENCE_KEY_FILE {shown} cannot be read: {e}"))?;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & OPEN_TO_OTHERS != 0 {
        return Err(format!(
            "EVIDENCE_KEY_FILE {shown} is open to its group or others (mode {mode:04o}); it \
             holds the key evidence is signed with, so only its owner may read it: run \
             `chmod 600 {shown}`"
        ));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| format!("EVIDENCE_KEY_FILE {shown} cannot be read: {e}"))?;
    // Never the file's content in the error: it is the secret.
    let key = ApproverKey::parse(&text).ok_or_else(|| {
        format!(
            "EVIDENCE_KEY_FILE {shown} holds no Ed25519 private key (one line of unpadded \
             base64url, as `fleetctl key generate --out {shown}` writes it)"
        )
    })?;
    Ok((key, modified(&file)))
}

/// The earlier keys in `dir`, by file name.
fn read_public_dir(dir: &Path) -> Result<Vec<PublishedKey>, String> {
    let shown = dir.display();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("EVIDENCE_PUBLIC_KEYS_DIR {shown} cannot be read: {e}"))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pub"))
        .collect();
    paths.sort();
    let mut keys = Vec::new();
    for path in paths {
        let mut file =
            File::open(&path).map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
        let key = PublicKey::parse(&text).ok_or_else(|| {
            format!(
                "{} (in EVIDENCE_PUBLIC_KEYS_DIR) holds no Ed25519 public key",
                path.display()
            )
        })?;
        keys.push(PublishedKey {
            key,
            since: modified(&file),
            current: false,
        });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("evidence-key-{}", ulid::Ulid::new()));
        std::fs::create_dir(&d).unwrap();
        d
    }

    fn write(path: &Path, text: &str, mode: u32) {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_key_and_the_earlier_public_keys_are_published_current_first() {
        let d = dir();
        let key = ApproverKey::from_seed([3; 32]);
        let old = ApproverKey::from_seed([4; 32]);
        write(
            &d.join("evidence.key"),
            &format!("{}\n", key.to_text()),
            0o600,
        );
        let olds = d.join("old");
        std::fs::create_dir(&olds).unwrap();
        write(
            &olds.join("2025.pub"),
            &format!("{}\n", old.public_key().to_text()),
            0o644,
        );
        write(&olds.join("notes.txt"), "not a key", 0o644);
        let keys = EvidenceKeys::load(&EvidenceKeySettings {
            evidence_key_file: Some(d.join("evidence.key")),
            evidence_public_keys_dir: Some(olds),
        })
        .unwrap();
        assert_eq!(keys.signing().unwrap().public_key(), key.public_key());
        let published: Vec<(PublicKey, bool)> = keys
            .published()
            .iter()
            .map(|p| (p.key.clone(), p.current))
            .collect();
        assert_eq!(
            published,
            [(key.public_key(), true), (old.public_key(), false)]
        );
        assert!(keys.published()[0].since.is_some());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_key_file_open_to_others_or_holding_no_key_is_refused_by_name() {
        let d = dir();
        let key = ApproverKey::from_seed([3; 32]);
        let open = d.join("open.key");
        write(&open, &key.to_text(), 0o640);
        let settings = |p: &Path| EvidenceKeySettings {
            evidence_key_file: Some(p.to_owned()),
            evidence_public_keys_dir: None,
        };
        let refused = EvidenceKeys::load(&settings(&open)).unwrap_err();
        assert!(refused.contains("EVIDENCE_KEY_FILE"), "{refused}");
        assert!(refused.contains("chmod 600"), "{refused}");
        assert!(
            !refused.contains(&key.to_text()),
            "never the key: {refused}"
        );
        let garbage = d.join("garbage.key");
        write(&garbage, "not-a-key-at-all", 0o600);
        let refused = EvidenceKeys::load(&settings(&garbage)).unwrap_err();
        assert!(
            refused.contains("holds no Ed25519 private key"),
            "{refused}"
        );
        assert!(!refused.contains("not-a-key-at-all"), "{refused}");
        let missing = EvidenceKeys::load(&settings(&d.join("absent.key"))).unwrap_err();
        assert!(missing.contains("cannot be read"), "{missing}");
        // Without the setting, the API starts without a key.
        let none = EvidenceKeys::load(&EvidenceKeySettings::default()).unwrap();
        assert!(none.signing().is_none() && none.published().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
