//! The config file of people's commands: named contexts (an API URL, a tenant, where the
//! token comes from) and which one is current. TOML, at `$FLEET_CONFIG`, else
//! `$XDG_CONFIG_HOME/fleet/config.toml`, else `~/.config/fleet/config.toml`.
//!
//! A context names where its token is (an environment variable or a file) rather than
//! holding it; a token is stored in the file only when its user handed it over on
//! purpose (`context add --token-stdin`). The file is always written with mode 0600, and
//! a token stored in a file others can read is refused, as ssh refuses such a key.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};

/// `--config`, for every command that reads or writes the config file.
#[derive(Args, Clone, Debug, Default)]
pub struct ConfigArg {
    /// The config file of contexts [default: $XDG_CONFIG_HOME/fleet/config.toml, else
    /// ~/.config/fleet/config.toml].
    #[arg(long = "config", env = "FLEET_CONFIG", value_name = "PATH")]
    pub path: Option<PathBuf>,
}

impl ConfigArg {
    /// The file this command reads and writes.
    pub fn file(&self) -> anyhow::Result<PathBuf> {
        config_path(
            self.path.as_deref(),
            std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from),
            std::env::var_os("HOME").map(PathBuf::from),
        )
    }
}

/// Where the config file is: the path given, else under `$XDG_CONFIG_HOME` (only an
/// absolute one counts, as the XDG base directory specification says), else under
/// `~/.config`.
pub fn config_path(
    given: Option<&Path>,
    xdg_config_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> anyhow::Result<PathBuf> {
    if let Some(path) = given {
        return Ok(path.to_owned());
    }
    let base = match xdg_config_home.filter(|p| p.is_absolute()) {
        Some(xdg) => xdg,
        None => home
            .filter(|h| !h.as_os_str().is_empty())
            .context("no config file: set FLEET_CONFIG (or --config), XDG_CONFIG_HOME or HOME")?
            .join(".config"),
    };
    Ok(base.join("fleet").join("config.toml"))
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The context used when none is named (`context use`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    #[serde(default)]
    pub contexts: BTreeMap<String, ApiContext>,
}

/// One named context. At most one of `token_env`, `token_file` and `token` is set
/// (three keys rather than one tagged value: the file reads as plain settings).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiContext {
    pub api_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The name of an environment variable holding the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// A file holding the token (its first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The token itself, stored because its user asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl ApiContext {
    /// Where this context's token is, if it says.
    pub fn token_ref(&self) -> anyhow::Result<Option<TokenRef>> {
        match (&self.token_env, &self.token_file, &self.token) {
            (None, None, None) => Ok(None),
            (Some(var), None, None) => Ok(Some(TokenRef::Env(var.clone()))),
            (None, Some(path), None) => Ok(Some(TokenRef::File(path.clone()))),
            (None, None, Some(token)) => Ok(Some(TokenRef::Stored(token.clone()))),
            _ => anyhow::bail!(
                "a context takes its token from one place: token_env, token_file or token"
            ),
        }
    }

    /// This context with its token taken from `token`.
    #[must_use]
    pub fn with_token(self, token: Option<TokenRef>) -> ApiContext {
        let (mut token_env, mut token_file, mut stored) = (None, None, None);
        match token {
            None => {}
            Some(TokenRef::Env(var)) => token_env = Some(var),
            Some(TokenRef::File(path)) => token_file = Some(path),
            Some(TokenRef::Stored(t)) => stored = Some(t),
        }
        ApiContext {
            token_env,
            token_file,
            token: stored,
            ..self
        }
    }
}

/// Where a context's token is.
#[derive(Clone, PartialEq, Eq)]
pub enum TokenRef {
    /// The name of an environment variable holding it.
    Env(String),
    /// A file holding it (its first line).
    File(PathBuf),
    /// The token itself.
    Stored(String),
}

impl std::fmt::Debug for TokenRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl TokenRef {
    /// Where the token is, in words, never the token.
    pub fn describe(&self) -> String {
        match self {
            TokenRef::Env(var) => format!("the environment variable {var}"),
            TokenRef::File(path) => format!("the file {}", path.display()),
            TokenRef::Stored(_) => "stored in the config file".to_owned(),
        }
    }
}

impl Config {
    /// The file at `path`, or an empty config when there is none yet.
    pub fn load(path: &Path) -> anyhow::Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let config: Config = toml::from_str(&text)
            .with_context(|| format!("{} is not a fleet config file", path.display()))?;
        if config.holds_a_token() {
            let metadata =
                std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
            crate::secret_file::ensure_private(path, &metadata, "the config file")?;
        }
        Ok(config)
    }

    fn holds_a_token(&self) -> bool {
        self.contexts.values().any(|c| c.token.is_some())
    }

    /// Writes the file whole, mode 0600 (a new file beside it, then renamed over it, so a
    /// reader never sees half a file and the mode holds from the first byte on).
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        let text = toml::to_string(self)?;
        let temporary = dir.join(format!(".config.toml.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .with_context(|| format!("creating {}", temporary.display()))?;
        let written = file
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&temporary, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.with_context(|| format!("writing {}", path.display()))
    }

    /// The context `name`, or why there is none.
    pub fn context(&self, name: &str) -> anyhow::Result<&ApiContext> {
        self.contexts.get(name).with_context(|| {
            let known: Vec<&str> = self.contexts.keys().map(String::as_str).collect();
            if known.is_empty() {
                format!("no context {name}: there are none yet (`fleetctl context add`)")
            } else {
                format!("no context {name}; there are: {}", known.join(", "))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_path_given_wins_then_xdg_then_home() {
        let home = Some(PathBuf::from("/home/ann"));
        assert_eq!(
            config_path(Some(Path::new("/etc/fleet.toml")), None, home.clone()).unwrap(),
            PathBuf::from("/etc/fleet.toml")
        );
        assert_eq!(
            config_path(None, Some("/xdg".into()), home.clone()).unwrap(),
            PathBuf::from("/xdg/fleet/config.toml")
        );
        // A relative XDG_CONFIG_HOME is to be ignored (XDG base directory specification).
        assert_eq!(
            config_path(None, Some("rel".into()), home.clone()).unwrap(),
            PathBuf::from("/home/ann/.config/fleet/config.toml")
        );
        assert!(config_path(None, None, None).is_err());
    }

    #[test]
    fn a_context_reads_and_writes_each_kind_of_token_reference() {
        let text = r#"
current = "prod"

[contexts.prod]
api_url = "https://fleet.example"
tenant = "org_482"
token_env = 'FLEET_PROD_TOKEN'

[contexts.dev]
api_url = "http://127.0.0.1:8080"
token_file = "/run/fleet/token"

[contexts.bare]
api_url = "http://127.0.0.1:8080"
"#;
        let config: Config = toml::from_str(text).unwrap();
        assert_eq!(config.current.as_deref(), Some("prod"));
        let prod = config.context("prod").unwrap();
        assert_eq!(prod.tenant.as_deref(), Some("org_482"));
        assert_eq!(
            prod.token_ref().unwrap(),
            Some(TokenRef::Env("FLEET_PROD_TOKEN".into()))
        );
        assert_eq!(
            config.context("dev").unwrap().token_ref().unwrap(),
            Some(TokenRef::File("/run/fleet/token".into()))
        );
        assert_eq!(config.context("bare").unwrap().token_ref().unwrap(), None);
        let two = ApiContext {
            token_env: Some("A".into()),
            token_file: Some("/b".into()),
            ..ApiContext::default()
        };
        assert!(two.token_ref().is_err());
        assert!(config
            .context("staging")
            .unwrap_err()
            .to_string()
            .contains("bare, dev, prod"));
        let again: Config = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
        assert_eq!(again, config);
        // A misspelt key is an error, not a silently missing setting.
        assert!(
            toml::from_str::<Config>("[contexts.x]\napi_url = \"u\"\ntoken_evn = \"T\"\n").is_err()
        );
    }

    #[test]
    fn the_file_is_written_0600_and_a_stored_token_others_can_read_is_refused() {
        let dir = std::env::temp_dir().join(format!("fleetctl-config-{}", ulid::Ulid::new()));
        let path = dir.join("nested").join("config.toml");
        let mut config = Config::default();
        config.contexts.insert(
            "prod".into(),
            ApiContext {
                api_url: "https://fleet.example".into(),
                token: Some("fleet_secret".into()),
                ..ApiContext::default()
            },
        );
        config.save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(Config::load(&path).unwrap(), config);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = Config::load(&path).unwrap_err().to_string();
        assert!(refused.contains("chmod 600"), "{refused}");
        assert_eq!(
            Config::load(&dir.join("absent.toml")).unwrap(),
            Config::default()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
