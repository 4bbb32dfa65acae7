//! Files that hold a secret (a token file, an approver's signing key, a config file with a
//! token in it) are read only when nobody but their owner may read or write them, as ssh
//! does with a private key. A token another user of the machine can read is a token they
//! hold; a key file they can write is a key they can replace. So such a file is refused,
//! with its name and the fix, before its content is read, and nothing of it is shown.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::Context as _;

/// The permission bits of group and others.
const OPEN_TO_OTHERS: u32 = 0o077;

/// Refuses `path` (described as `what`) when `metadata` lets its group or others at it.
pub fn ensure_private(path: &Path, metadata: &Metadata, what: &str) -> anyhow::Result<()> {
    let mode = metadata.permissions().mode() & 0o777;
    anyhow::ensure!(
        mode & OPEN_TO_OTHERS == 0,
        "{what} {path} is open to its group or others (mode {mode:04o}); it holds a secret, \
         so only its owner may read it: run `chmod 600 {path}`",
        path = path.display(),
    );
    Ok(())
}

/// The text of the secret file `path`, once its mode is its owner's only. The mode is
/// taken from the opened file, so the file checked is the file read.
pub fn read_secret(path: &Path, what: &str) -> anyhow::Result<String> {
    let mut file =
        File::open(path).with_context(|| format!("reading {what} {}", path.display()))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("reading {what} {}", path.display()))?;
    ensure_private(path, &metadata, what)?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    Ok(text)
}

/// Writes a test's secret file the way fleetctl wants it: mode 0600 from the first byte.
#[cfg(test)]
pub fn write_private_for_test(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(mode: u32) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("fleetctl-secret-{}", ulid::Ulid::new()));
        std::fs::write(&path, "fleet_secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_file_only_its_owner_may_read_is_read() {
        for mode in [0o600, 0o400] {
            let path = file(mode);
            assert_eq!(
                read_secret(&path, "the token file").unwrap(),
                "fleet_secret\n"
            );
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn a_file_its_group_or_others_may_read_or_write_is_refused_with_the_fix() {
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o666] {
            let path = file(mode);
            let refused = read_secret(&path, "the token file")
                .unwrap_err()
                .to_string();
            assert!(refused.contains(&path.display().to_string()), "{refused}");
            assert!(refused.contains(&format!("mode {mode:04o}")), "{refused}");
            assert!(
                refused.contains(&format!("chmod 600 {}", path.display())),
                "{refused}"
            );
            assert!(
                !refused.contains("fleet_secret"),
                "never the secret: {refused}"
            );
            std::fs::remove_file(&path).unwrap();
        }
    }
}
