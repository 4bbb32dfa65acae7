//! Which API a person's command talks to, as whom, for which tenant. Each value is taken,
//! first found wins, from: the flag, its environment variable, the context (`--context`
//! or FLEET_CONTEXT, else the config file's current one), the default. The token's own
//! order is `--token`/FLEET_TOKEN, then `--token-file`/FLEET_TOKEN_FILE, then the
//! context's reference. Resolving is pure (`resolve`); only reading the token touches the
//! environment or a file.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use fleet_runtime::Secret;

use crate::config::{Config, ConfigArg, TokenRef};

pub const DEFAULT_API_URL: &str = "http://127.0.0.1:8080";

/// Where fleet-api is and who is calling: the flags of every command that goes through
/// the API.
#[derive(Args, Debug, Clone, Default)]
pub struct ApiArgs {
    /// Base URL of fleet-api [default: the context's, else http://127.0.0.1:8080].
    #[arg(long, env = "FLEET_API_URL")]
    pub api_url: Option<String>,
    /// The bearer token of your principal (`fleetctl token create`). Prefer the
    /// environment variable or --token-file: a flag shows in the process list.
    #[arg(long, env = "FLEET_TOKEN", hide_env_values = true)]
    pub token: Option<Secret<String>>,
    /// A file whose first line is your token.
    #[arg(long, env = "FLEET_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Act in this tenant only: another tenant's operation is not found. Needed when
    /// two of your tenants hold the same operation id.
    #[arg(long, env = "FLEET_TENANT")]
    pub tenant: Option<String>,
    /// The context of the config file to use [default: its current one].
    #[arg(long, env = "FLEET_CONTEXT")]
    pub context: Option<String>,
    #[command(flatten)]
    pub config: ConfigArg,
}

/// Where a resolved value came from, for `context show` and for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The flag or its environment variable.
    Given(&'static str),
    /// The named context.
    Context(String),
    /// Nobody said; the default.
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Given(flag) => write!(f, "{flag}"),
            Origin::Context(name) => write!(f, "context {name}"),
            Origin::Default => f.write_str("default"),
        }
    }
}

/// Where the token is, before it is read.
#[derive(Debug, Clone)]
pub enum TokenSource {
    /// `--token` or FLEET_TOKEN.
    Given(Secret<String>),
    /// `--token-file` or FLEET_TOKEN_FILE.
    GivenFile(PathBuf),
    /// The context's reference.
    Context { name: String, at: TokenRef },
}

impl TokenSource {
    pub fn describe(&self) -> String {
        match self {
            TokenSource::Given(_) => "--token or FLEET_TOKEN".to_owned(),
            TokenSource::GivenFile(path) => {
                format!(
                    "the file {} (--token-file or FLEET_TOKEN_FILE)",
                    path.display()
                )
            }
            TokenSource::Context { name, at } => format!("{} (context {name})", at.describe()),
        }
    }
}

/// What a command will use.
#[derive(Debug, Clone)]
pub struct Target {
    pub api_url: String,
    pub api_url_from: Origin,
    pub tenant: Option<String>,
    pub tenant_from: Origin,
    pub token: Option<TokenSource>,
    /// The context in use, if any.
    pub context: Option<String>,
}

/// The target of `args` over `config` (see the module's order).
pub fn resolve(args: &ApiArgs, config: &Config) -> anyhow::Result<Target> {
    let context = match (&args.context, &config.current) {
        (Some(name), _) => Some((name.clone(), config.context(name)?)),
        (None, Some(current)) => Some((
            current.clone(),
            config.context(current).with_context(|| {
                format!("the config's current context {current} is gone: `fleetctl context use` another")
            })?,
        )),
        (None, None) => None,
    };
    let (api_url, api_url_from) = match (&args.api_url, &context) {
        (Some(url), _) => (url.clone(), Origin::Given("--api-url or FLEET_API_URL")),
        (None, Some((name, c))) => (c.api_url.clone(), Origin::Context(name.clone())),
        (None, None) => (DEFAULT_API_URL.to_owned(), Origin::Default),
    };
    let (tenant, tenant_from) = match (&args.tenant, &context) {
        (Some(t), _) => (Some(t.clone()), Origin::Given("--tenant or FLEET_TENANT")),
        (None, Some((name, c))) if c.tenant.is_some() => {
            (c.tenant.clone(), Origin::Context(name.clone()))
        }
        _ => (None, Origin::Default),
    };
    let token = match (&args.token, &args.token_file, &context) {
        (Some(token), _, _) => Some(TokenSource::Given(token.clone())),
        (None, Some(path), _) => Some(TokenSource::GivenFile(path.clone())),
        (None, None, Some((name, c))) => c.token_ref()?.map(|at| TokenSource::Context {
            name: name.clone(),
            at,
        }),
        (None, None, None) => None,
    };
    Ok(Target {
        api_url,
        api_url_from,
        tenant,
        tenant_from,
        token,
        context: context.map(|(name, _)| name),
    })
}

impl ApiArgs {
    /// The target of these flags over the config file. Without a file (or a place for
    /// one) there are no contexts, unless one was asked for by name.
    pub fn target(&self) -> anyhow::Result<Target> {
        let config = match self.config.file() {
            Ok(path) => Config::load(&path)?,
            Err(_) if self.context.is_none() => Config::default(),
            Err(e) => return Err(e),
        };
        resolve(self, &config)
    }
}

impl Target {
    /// Reads the token from where it is (`env` looks a variable up).
    pub fn read_token(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Secret<String>> {
        let source = self.token.as_ref().context(
            "no token: set FLEET_TOKEN (or --token-file, or a context with `fleetctl context add`) \
             to the token of your principal; an administrator creates one with `fleetctl token create`",
        )?;
        let token = match source {
            TokenSource::Given(token) => return Ok(token.clone()),
            TokenSource::GivenFile(path)
            | TokenSource::Context {
                at: TokenRef::File(path),
                ..
            } => first_line(path)?,
            TokenSource::Context {
                name,
                at: TokenRef::Env(var),
            } => env(var).filter(|t| !t.trim().is_empty()).with_context(|| {
                format!("context {name} takes its token from the environment variable {var}, which is not set")
            })?,
            TokenSource::Context {
                at: TokenRef::Stored(token),
                ..
            } => token.clone(),
        };
        Ok(Secret::new(token.trim().to_owned()))
    }
}

fn first_line(path: &std::path::Path) -> anyhow::Result<String> {
    let text = crate::secret_file::read_secret(path, "the token file")?;
    let line = text.lines().next().unwrap_or("").trim();
    anyhow::ensure!(
        !line.is_empty(),
        "the token file {} is empty",
        path.display()
    );
    Ok(line.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiContext;
    use crate::secret_file::write_private_for_test;

    fn config() -> Config {
        let mut c = Config {
            current: Some("prod".into()),
            ..Config::default()
        };
        c.contexts.insert(
            "prod".into(),
            ApiContext {
                api_url: "https://prod.example".into(),
                tenant: Some("org_482".into()),
                token_env: Some("PROD_TOKEN".into()),
                ..ApiContext::default()
            },
        );
        c.contexts.insert(
            "dev".into(),
            ApiContext {
                api_url: "http://127.0.0.1:8080".into(),
                token: Some("fleet_stored".into()),
                ..ApiContext::default()
            },
        );
        c
    }

    fn env(var: &str) -> Option<String> {
        (var == "PROD_TOKEN").then(|| "fleet_from_env".to_owned())
    }

    #[test]
    fn without_flags_the_current_context_decides() {
        let t = resolve(&ApiArgs::default(), &config()).unwrap();
        assert_eq!(t.api_url, "https://prod.example");
        assert_eq!(t.api_url_from, Origin::Context("prod".into()));
        assert_eq!(t.tenant.as_deref(), Some("org_482"));
        assert_eq!(t.read_token(env).unwrap().expose(), "fleet_from_env");
        assert!(resolve(&ApiArgs::default(), &config())
            .unwrap()
            .read_token(|_| None)
            .unwrap_err()
            .to_string()
            .contains("PROD_TOKEN, which is not set"));
    }

    #[test]
    fn flags_and_their_environment_override_the_context() {
        let args = ApiArgs {
            api_url: Some("http://other:8080".into()),
            tenant: Some("org_9".into()),
            token: Some(Secret::new("fleet_flag".into())),
            ..ApiArgs::default()
        };
        let t = resolve(&args, &config()).unwrap();
        assert_eq!(
            (t.api_url.as_str(), t.tenant.as_deref()),
            ("http://other:8080", Some("org_9"))
        );
        assert_eq!(t.api_url_from, Origin::Given("--api-url or FLEET_API_URL"));
        assert_eq!(t.read_token(env).unwrap().expose(), "fleet_flag");
    }

    #[test]
    fn a_named_context_wins_over_the_current_one_and_must_exist() {
        let args = ApiArgs {
            context: Some("dev".into()),
            ..ApiArgs::default()
        };
        let t = resolve(&args, &config()).unwrap();
        assert_eq!(t.api_url, "http://127.0.0.1:8080");
        assert_eq!(
            t.tenant, None,
            "dev names no tenant; prod's is not borrowed"
        );
        assert_eq!(t.read_token(env).unwrap().expose(), "fleet_stored");
        let missing = ApiArgs {
            context: Some("staging".into()),
            ..ApiArgs::default()
        };
        assert!(resolve(&missing, &config()).is_err());
    }

    #[test]
    fn without_a_context_the_defaults_hold_and_no_token_says_where_one_comes_from() {
        let t = resolve(&ApiArgs::default(), &Config::default()).unwrap();
        assert_eq!(
            (t.api_url.as_str(), &t.api_url_from),
            (DEFAULT_API_URL, &Origin::Default)
        );
        let refused = t.read_token(env).unwrap_err().to_string();
        assert!(
            refused.contains("FLEET_TOKEN") && refused.contains("fleetctl token create"),
            "{refused}"
        );
    }

    #[test]
    fn a_token_file_gives_its_first_line_and_beats_the_context() {
        let path = std::env::temp_dir().join(format!("fleetctl-token-{}", ulid::Ulid::new()));
        write_private_for_test(&path, "fleet_in_file\n# a comment line\n");
        let args = ApiArgs {
            token_file: Some(path.clone()),
            ..ApiArgs::default()
        };
        let t = resolve(&args, &config()).unwrap();
        assert_eq!(t.read_token(env).unwrap().expose(), "fleet_in_file");
        write_private_for_test(&path, "\n");
        assert!(t
            .read_token(env)
            .unwrap_err()
            .to_string()
            .contains("is empty"));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_token_file_others_may_read_is_refused_with_the_fix() {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!("fleetctl-token-{}", ulid::Ulid::new()));
        write_private_for_test(&path, "fleet_in_file\n");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let args = ApiArgs {
            token_file: Some(path.clone()),
            ..ApiArgs::default()
        };
        let refused = resolve(&args, &config())
            .unwrap()
            .read_token(env)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("the token file")
                && refused.contains(&format!("chmod 600 {}", path.display()))
                && !refused.contains("fleet_in_file"),
            "{refused}"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
