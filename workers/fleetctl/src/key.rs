//! `fleetctl key`: approvers' signing keys. `generate` makes an Ed25519 key pair on this
//! machine (the private key goes to a file only its owner can read, and nowhere else);
//! `add`, `accept` (a passkey an approver registered in the console), `remove`, `list`
//! and `requests` are an administrator's, over the owner's database
//! connection, like `fleetctl principal`: each registration and removal is recorded with
//! who made it. A registration is signed by the administrator making it, with their own
//! registered key (`--signing-key`); the first administrators' keys are signed by the
//! deployment's evidence key (`--evidence-key`), the root every chain ends at.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use fleet_core::key_registration::RegistrarKey;
use fleet_core::{ApproverKey, KeyId, PublicKey};
use fleet_store::{KeyAdded, KeyRemoved, Store};

use serde_json::json;

use crate::args::{Database, Format};
use crate::output;

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Generate an Ed25519 key pair: the private key is written to PATH (mode 0600, never
    /// overwritten), the public key to PATH.pub and printed, to be registered with
    /// `fleetctl key add`.
    Generate {
        /// Where to write the private key.
        #[arg(long)]
        out: PathBuf,
    },
    /// Register an approver's public key (approvals they sign with it count from now on),
    /// or an administrator's (registrations they sign with it count from now on).
    Add {
        /// The approver or administrator it belongs to.
        #[arg(long)]
        principal: String,
        /// The public key (base64url or base64, as `key generate` prints it), or a file
        /// holding it (PATH.pub).
        // One key in 64 begins with `-` in base64url: it is the value, never a flag.
        #[arg(long, allow_hyphen_values = true)]
        public_key: String,
        #[command(flatten)]
        registration: RegistrationArgs,
    },
    /// Register a passkey an approver created in the console (Passkeys page): the console
    /// showed them its key id, which they give you. Approvals they sign with it count
    /// from now on.
    Accept {
        /// The passkey's id (`passkey:…`), as the approver's console shows it.
        key_id: String,
        #[command(flatten)]
        registration: RegistrationArgs,
    },
    /// List the passkeys approvers created in the console, accepted or waiting.
    Requests {
        #[command(flatten)]
        db: Database,
    },
    /// Remove a key: nothing it signed counts any more, including approvals of operations
    /// that have not run yet. The key stays listed, as removed.
    Remove {
        /// The key's id (`ed25519:…` or `passkey:…`).
        key_id: String,
        /// Who is removing it (recorded with the key).
        #[arg(long, env = "FLEET_ADMIN")]
        by: String,
        #[command(flatten)]
        db: Database,
    },
    /// List every key, removed ones included.
    List {
        #[command(flatten)]
        db: Database,
    },
}

/// Who registers a key, the key the registration is signed with, and the database.
#[derive(clap::Args, Debug)]
pub struct RegistrationArgs {
    /// Who is registering it (recorded with the key).
    #[arg(long, env = "FLEET_ADMIN")]
    by: String,
    #[command(flatten)]
    registrar: RegistrarArgs,
    #[command(flatten)]
    db: Database,
}

/// A registration about to be made: the registrar's key read, the database connected and
/// who registers checked.
struct Registration {
    store: Store,
    by: String,
    key: (ApproverKey, bool),
}

impl RegistrationArgs {
    fn open(self) -> anyhow::Result<Registration> {
        let key = self.registrar.read()?;
        let store = Store::connect(self.db.database_url.expose(), 2)?;
        check_by(&self.by, "registers")?;
        Ok(Registration {
            store,
            by: self.by,
            key,
        })
    }
}

impl Registration {
    fn registrar(&self) -> RegistrarKey<'_> {
        registrar_of(&self.key)
    }
}

/// The key a registration is signed with: exactly one of the two.
#[derive(clap::Args, Debug)]
#[group(required = false, multiple = false)]
pub struct RegistrarArgs {
    /// The registering administrator's own private key (written by `key generate`,
    /// registered for them with `key add`): it signs the registration.
    #[arg(long, env = "FLEET_ADMIN_KEY_FILE")]
    pub signing_key: Option<PathBuf>,
    /// The deployment's evidence key file (the API's EVIDENCE_KEY_FILE): the root of the
    /// chain, for registering the first administrators' keys only.
    #[arg(long)]
    pub evidence_key: Option<PathBuf>,
}

impl RegistrarArgs {
    /// The key read from its file, and whose it is.
    fn read(&self) -> anyhow::Result<(ApproverKey, bool)> {
        match (&self.signing_key, &self.evidence_key) {
            (Some(path), _) => Ok((read_private(path)?, false)),
            (None, Some(path)) => Ok((read_private(path)?, true)),
            (None, None) => anyhow::bail!(
                "a registration is signed: name the administrator's key with --signing-key \
                 (or FLEET_ADMIN_KEY_FILE), or the deployment's evidence key with --evidence-key"
            ),
        }
    }
}

fn registrar_of((key, root): &(ApproverKey, bool)) -> RegistrarKey<'_> {
    if *root {
        RegistrarKey::EvidenceKey(key)
    } else {
        RegistrarKey::Admin(key)
    }
}

/// Runs `command`; generating a key pair touches no database, the others connect with
/// the owner's URL they were given.
pub async fn run(command: KeyCommand, format: Format) -> anyhow::Result<()> {
    let store = |db: &Database| Store::connect(db.database_url.expose(), 2);
    match command {
        KeyCommand::Generate { out } => generate(&out, format),
        KeyCommand::Add {
            principal,
            public_key,
            registration,
        } => add(&registration.open()?, &principal, &public_key, format).await,
        KeyCommand::Accept {
            key_id,
            registration,
        } => accept(&registration.open()?, &key_id, format).await,
        KeyCommand::Requests { db } => requests(&store(&db)?, format).await,
        KeyCommand::Remove { key_id, by, db } => remove(&store(&db)?, &key_id, &by, format).await,
        KeyCommand::List { db } => list(&store(&db)?, format).await,
    }
}

/// The path of the public key written beside the private key at `out`.
pub fn public_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Writes a new key pair (`out`, `out.pub`) and prints the public key and its id.
pub fn generate(out: &Path, format: Format) -> anyhow::Result<()> {
    let key = new_key()?;
    write_private(out, &key)?;
    let public = key.public_key();
    std::fs::write(public_path(out), format!("{}\n", public.to_text()))
        .with_context(|| format!("writing {}", public_path(out).display()))?;
    output::result(
        format,
        || {
            json!({
                "key_id": public.key_id().as_str(),
                "public_key": public.to_text(),
                "private_key_file": out.display().to_string(),
                "public_key_file": public_path(out).display().to_string(),
            })
        },
        || public.to_text(),
    );
    eprintln!(
        "wrote the private key to {} (keep it on this machine) and the public key to {}; key id {}",
        out.display(),
        public_path(out).display(),
        public.key_id()
    );
    Ok(())
}

/// A key from 32 bytes of the operating system's random generator.
pub fn new_key() -> anyhow::Result<ApproverKey> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
    Ok(ApproverKey::from_seed(seed))
}

/// Creates `out` readable by its owner only, refusing to replace an existing file (an
/// overwritten key is a key lost).
pub fn write_private(out: &Path, key: &ApproverKey) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(out).with_context(|| {
        format!(
            "creating {} (an existing file is never replaced)",
            out.display()
        )
    })?;
    file.write_all(format!("{}\n", key.to_text()).as_bytes())
        .with_context(|| format!("writing {}", out.display()))
}

/// Reads a private key file written by [`generate`].
pub fn read_private(path: &Path) -> anyhow::Result<ApproverKey> {
    let text = crate::secret_file::read_secret(path, "the signing key")?;
    // Never the file's content in the error: it is the secret.
    ApproverKey::parse(&text).with_context(|| {
        format!(
            "{} holds no signing key written by `fleetctl key generate`",
            path.display()
        )
    })
}

/// The public key given on the command line: the key itself, or a file holding it.
fn public_key_of(arg: &str) -> anyhow::Result<PublicKey> {
    if let Some(key) = PublicKey::parse(arg) {
        return Ok(key);
    }
    let text = std::fs::read_to_string(arg)
        .with_context(|| format!("{arg:?} is neither a public key nor a readable file"))?;
    PublicKey::parse(&text).with_context(|| format!("{arg} holds no Ed25519 public key"))
}

async fn add(
    registration: &Registration,
    principal: &str,
    public_key: &str,
    format: Format,
) -> anyhow::Result<()> {
    let key = public_key_of(public_key)?;
    let added = registration
        .store
        .add_approver_key(principal, &key, &registration.by, registration.registrar())
        .await?;
    report_added(added, principal, format)
}

fn report_added(added: KeyAdded, principal: &str, format: Format) -> anyhow::Result<()> {
    match added {
        KeyAdded::Added { key_id } => output::result(
            format,
            || json!({"key_id": key_id.to_string(), "principal": principal}),
            || format!("registered {key_id} for {principal}"),
        ),
        KeyAdded::AlreadyRegistered {
            principal: owner,
            removed,
        } => anyhow::bail!(
            "refused: this key was registered before, for {owner}{}; a key is registered once",
            if removed { " (since removed)" } else { "" }
        ),
        KeyAdded::UnknownPrincipal => anyhow::bail!("no principal is named {principal}"),
        KeyAdded::NoSuchRequest => anyhow::bail!(
            "no approver registered this passkey in the console (see `fleetctl key requests`)"
        ),
        KeyAdded::NotAnApprover { role } => anyhow::bail!(
            "refused: {principal} is an {role}; only approvers and administrators have keys (and passkeys are approvers' only)"
        ),
        KeyAdded::RegistrarRefused { reason } => {
            anyhow::bail!("refused: the registration cannot be signed with this key: {reason}")
        }
    }
    Ok(())
}

fn check_by(by: &str, what: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !by.trim().is_empty() && by.len() <= 256,
        "--by names who {what} the key (1 to 256 characters)"
    );
    Ok(())
}

fn key_id_of(key_id: &str) -> anyhow::Result<KeyId> {
    KeyId::parse(key_id).with_context(|| {
        format!("{key_id:?} is not a key id (ed25519: or passkey: + 32 hex digits)")
    })
}

async fn accept(registration: &Registration, key_id: &str, format: Format) -> anyhow::Result<()> {
    let Registration { store, by, .. } = registration;
    let id = key_id_of(key_id)?;
    anyhow::ensure!(
        id.is_passkey(),
        "{id} is not a passkey: register an Ed25519 key with `fleetctl key add`"
    );
    let principal = store
        .passkey_requests(None)
        .await?
        .into_iter()
        .find(|r| r.key_id == id.as_str())
        .map(|r| r.principal)
        .unwrap_or_default();
    report_added(
        store
            .accept_passkey(&id, by, registration.registrar())
            .await?,
        &principal,
        format,
    )
}

async fn requests(store: &Store, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        let rows: Vec<_> = store
            .passkey_requests(None)
            .await?
            .into_iter()
            .map(|r| {
                json!({
                    "key_id": r.key_id,
                    "principal": r.principal,
                    "created_at": rfc3339(r.finished_at),
                    "accepted_at": r.accepted_at.map(rfc3339),
                    "removed_at": r.removed_at.map(rfc3339),
                })
            })
            .collect();
        output::json(&json!({ "requests": rows }));
        return Ok(());
    }
    println!(
        "{:<41} {:<20} {:<17} state",
        "key id", "principal", "created"
    );
    for r in store.passkey_requests(None).await? {
        let state = match (r.accepted_at, r.removed_at) {
            (_, Some(at)) => format!("removed {}", at.format("%Y-%m-%d %H:%M")),
            (Some(at), None) => format!("registered {}", at.format("%Y-%m-%d %H:%M")),
            (None, None) => "waiting: fleetctl key accept <key id>".to_owned(),
        };
        println!(
            "{:<41} {:<20} {:<17} {state}",
            r.key_id,
            r.principal,
            r.finished_at.format("%Y-%m-%d %H:%M")
        );
    }
    Ok(())
}

async fn remove(store: &Store, key_id: &str, by: &str, format: Format) -> anyhow::Result<()> {
    check_by(by, "removes")?;
    let id = key_id_of(key_id)?;
    match store.remove_approver_key(&id, by).await? {
        KeyRemoved::Removed { principal } => output::result(
            format,
            || json!({"key_id": id.as_str(), "principal": principal, "already_removed": false}),
            || format!("removed {id} of {principal}: nothing it signed counts any more"),
        ),
        KeyRemoved::AlreadyRemoved => output::result(
            format,
            || json!({"key_id": id.as_str(), "already_removed": true}),
            || format!("{id} was already removed"),
        ),
        KeyRemoved::NotFound => anyhow::bail!("no key {id} is registered"),
    }
    Ok(())
}

/// A time in JSON output: RFC 3339 UTC, whole seconds.
fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

async fn list(store: &Store, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        let rows: Vec<_> = store
            .list_approver_keys()
            .await?
            .into_iter()
            .map(|k| {
                json!({
                    "key_id": k.key_id,
                    "principal": k.principal,
                    "registered_at": rfc3339(k.registered_at),
                    "registered_by": k.registered_by,
                    "removed_at": k.removed_at.map(rfc3339),
                    "removed_by": k.removed_by,
                    "registration_signed_by": k.registrar_key_id,
                })
            })
            .collect();
        output::json(&json!({ "keys": rows }));
        return Ok(());
    }
    println!(
        "{:<41} {:<20} {:<17} {:<16} {:<41} removed",
        "key id", "principal", "registered", "by", "registration signed by"
    );
    for k in store.list_approver_keys().await? {
        let removed = match (&k.removed_at, &k.removed_by) {
            (Some(at), Some(by)) => format!("{} by {by}", at.format("%Y-%m-%d %H:%M")),
            _ => "-".to_owned(),
        };
        println!(
            "{:<41} {:<20} {:<17} {:<16} {:<41} {removed}",
            k.key_id,
            k.principal,
            k.registered_at.format("%Y-%m-%d %H:%M"),
            k.registered_by,
            k.registrar_key_id
                .as_deref()
                .unwrap_or("(unsigned: registered before signing)"),
        );
    }
    Ok(())
}

/// Makes `admin` an administrator holding `key`, registered with the deployment's
/// evidence key `root`: the first link of every chain of registrations (what an owner
/// does once, with `principal add --role admin` and `key add --evidence-key`). A key
/// already registered for them is kept.
pub async fn bootstrap_admin(
    store: &Store,
    admin: &str,
    key: &ApproverKey,
    root: &ApproverKey,
    by: &str,
) -> anyhow::Result<()> {
    let added = store
        .add_principal(&fleet_store::NewPrincipal {
            name: admin,
            role: fleet_core::Role::Admin,
            tenants: &[],
            oidc_subject: None,
        })
        .await?;
    anyhow::ensure!(
        matches!(
            added,
            fleet_store::PrincipalAdded::Added { .. } | fleet_store::PrincipalAdded::Updated { .. }
        ),
        "making {admin} an administrator: {added:?}"
    );
    match store
        .add_approver_key(
            admin,
            &key.public_key(),
            by,
            RegistrarKey::EvidenceKey(root),
        )
        .await?
    {
        KeyAdded::Added { .. } => Ok(()),
        KeyAdded::AlreadyRegistered { principal, .. } if principal == admin => Ok(()),
        other => anyhow::bail!("registering the key of {admin}: {other:?}"),
    }
}
