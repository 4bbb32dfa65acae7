//! `fleetctl context add | use | list | show | remove`: named API contexts in the config
//! file (`config`), so that a person switches fleets (or tenants) by name rather than by
//! exporting URLs and tokens. A context references its token (an environment variable or
//! a file); it holds the token itself only when given it on standard input.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{ArgGroup, Args, Subcommand};

use crate::api_target::{ApiArgs, TokenSource};
use crate::args::Format;
use crate::config::{ApiContext, Config, ConfigArg, TokenRef};
use crate::output;
use serde_json::json;

#[derive(Subcommand, Debug)]
pub enum ContextCommand {
    /// Add a context: where the API is, the tenant to act in, where your token is.
    Add(AddArgs),
    /// Make NAME the context used when none is named.
    Use {
        /// The context's name.
        name: String,
        #[command(flatten)]
        config: ConfigArg,
    },
    /// List the contexts (`*` marks the current one); never a token.
    List {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// What the API commands would use now, and where each value comes from (flags and
    /// their environment variables, then the context, then the defaults).
    Show {
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Remove a context (the current one too: then none is current).
    Remove {
        /// The context's name.
        name: String,
        #[command(flatten)]
        config: ConfigArg,
    },
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("token_source").args(["token_env", "token_file", "token_stdin"])))]
pub struct AddArgs {
    /// The context's name (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// Base URL of fleet-api.
    #[arg(long)]
    pub api_url: String,
    /// Act in this tenant only (`?tenant=` on every request).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Take the token from this environment variable when the context is used.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// Take the token from this file (its first line) when the context is used.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Read the token from standard input now and store it in the config file (mode
    /// 0600). Prefer --token-env or --token-file: a stored token is one more copy.
    #[arg(long)]
    pub token_stdin: bool,
    /// Replace a context of the same name.
    #[arg(long)]
    pub replace: bool,
    #[command(flatten)]
    pub config: ConfigArg,
}

pub fn run(command: ContextCommand, format: Format) -> anyhow::Result<()> {
    match command {
        ContextCommand::Add(args) => add(args, format),
        ContextCommand::Use { name, config } => {
            let path = config.file()?;
            let mut file = Config::load(&path)?;
            file.context(&name)?;
            file.current = Some(name.clone());
            file.save(&path)?;
            output::result(
                format,
                || json!({"current": name}),
                || format!("using context {name}"),
            );
            Ok(())
        }
        ContextCommand::List { config } => {
            let file = Config::load(&config.file()?)?;
            if format == Format::Json {
                let mut rows = Vec::new();
                for (name, c) in &file.contexts {
                    rows.push(json!({
                        "name": name,
                        "api_url": c.api_url.to_string(),
                        "tenant": c.tenant,
                        "token": c.token_ref()?.map(|t| t.describe()),
                        "current": file.current.as_deref() == Some(name),
                    }));
                }
                output::json(&json!({"current": file.current, "contexts": rows}));
                return Ok(());
            }
            say!(
                "{:<2}{:<16} {:<36} {:<14} TOKEN",
                "",
                "NAME",
                "API_URL",
                "TENANT"
            );
            for (name, c) in &file.contexts {
                let mark = if file.current.as_deref() == Some(name) {
                    "*"
                } else {
                    ""
                };
                let token = c
                    .token_ref()?
                    .map_or_else(|| "-".to_owned(), |t| t.describe());
                say!(
                    "{mark:<2}{name:<16} {:<36} {:<14} {token}",
                    c.api_url,
                    c.tenant.as_deref().unwrap_or("-")
                );
            }
            Ok(())
        }
        ContextCommand::Show { api } => {
            let target = api.target()?;
            if format == Format::Json {
                output::json(&json!({
                    "context": target.context,
                    "api_url": target.api_url.to_string(),
                    "api_url_from": target.api_url_from.to_string(),
                    "tenant": target.tenant,
                    "tenant_from": target.tenant_from.to_string(),
                    "token": target.token.as_ref().map(TokenSource::describe),
                }));
                return Ok(());
            }
            say!(
                "context   {}",
                target.context.as_deref().unwrap_or("(none)")
            );
            say!(
                "api_url   {}  (from {})",
                target.api_url,
                target.api_url_from
            );
            match &target.tenant {
                Some(t) => say!("tenant    {t}  (from {})", target.tenant_from),
                None => say!("tenant    (all of the token's)"),
            }
            say!(
                "token     {}",
                target
                    .token
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), TokenSource::describe)
            );
            Ok(())
        }
        ContextCommand::Remove { name, config } => {
            let path = config.file()?;
            let mut file = Config::load(&path)?;
            file.context(&name)?;
            file.contexts.remove(&name);
            if file.current.as_deref() == Some(name.as_str()) {
                file.current = None;
            }
            file.save(&path)?;
            output::result(
                format,
                || json!({"removed": name}),
                || format!("removed context {name}"),
            );
            Ok(())
        }
    }
}

fn add(args: AddArgs, format: Format) -> anyhow::Result<()> {
    check_name(&args.name)?;
    url::Url::parse(&args.api_url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .with_context(|| format!("{} is not an http(s) URL", args.api_url))?;
    if let Some(var) = &args.token_env {
        anyhow::ensure!(
            !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "--token-env names an environment variable (letters, digits, _), not a token"
        );
        // A token pasted where the variable's name belongs would be stored in plain text.
        anyhow::ensure!(
            !var.starts_with("fleet_"),
            "--token-env takes the name of a variable holding the token, not the token itself"
        );
    }
    let token = if args.token_stdin {
        Some(TokenRef::Stored(read_token_line(std::io::stdin().lock())?))
    } else if let Some(var) = args.token_env {
        Some(TokenRef::Env(var))
    } else {
        args.token_file.map(|path| {
            // Resolved now: the context must mean the same file from any directory.
            TokenRef::File(std::path::absolute(&path).unwrap_or(path))
        })
    };
    let path = args.config.file()?;
    let mut file = Config::load(&path)?;
    anyhow::ensure!(
        args.replace || !file.contexts.contains_key(&args.name),
        "a context {} exists: pass --replace, or `fleetctl context remove` it",
        args.name
    );
    let context = ApiContext {
        api_url: args.api_url,
        tenant: args.tenant,
        ..ApiContext::default()
    }
    .with_token(token);
    let where_token = context.token_ref()?.map_or_else(
        || "no token (give one with FLEET_TOKEN)".to_owned(),
        |t| format!("token from {}", t.describe()),
    );
    let context_token = context.token_ref()?.map(|t| t.describe());
    file.contexts.insert(args.name.clone(), context);
    file.save(&path)?;
    if format == Format::Json {
        output::json(&json!({
            "added": args.name,
            "config": path.display().to_string(),
            "token": context_token,
        }));
        return Ok(());
    }
    say!(
        "added context {} to {}: {where_token}",
        args.name,
        path.display()
    );
    if file.current.as_deref() != Some(args.name.as_str()) {
        say!(
            "use it with `fleetctl context use {}` or --context {}",
            args.name,
            args.name
        );
    }
    Ok(())
}

fn check_name(name: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')),
        "a context's name is 1 to 64 letters, digits, '-', '_' or '.'"
    );
    Ok(())
}

/// The token on the first line of `input`.
fn read_token_line(mut input: impl BufRead) -> anyhow::Result<String> {
    let mut line = String::new();
    input
        .read_line(&mut line)
        .context("reading the token from standard input")?;
    let token = line.trim();
    anyhow::ensure!(!token.is_empty(), "no token on standard input");
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_and_a_token_is_read_from_one_line() {
        for good in ["prod", "eu-1", "org_482.dev"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "x/y", "ünï"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert_eq!(read_token_line(&b"fleet_abc\n"[..]).unwrap(), "fleet_abc");
        assert!(read_token_line(&b"\n"[..]).is_err());
    }
}
