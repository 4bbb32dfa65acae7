//! `fleetctl token`: bearer tokens for the HTTP API. A new token is printed once and only
//! its SHA-256 is stored, so a lost token is revoked and replaced, never recovered. Every
//! token expires (`--expires-in`, 90 days unless told) and may be limited to some of its
//! principal's tenants (`--tenant`).

use clap::Subcommand;
use fleet_core::access::{
    check_principal_name, check_tenant_id, TokenLifetime, TOKEN_SECRET_BYTES,
};
use fleet_core::{Role, Token, TokenHash};
use fleet_store::{NewToken, Store, TokenCreated, TokenRevoked};
use serde_json::json;

use crate::args::Format;
use crate::output;

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a token for a principal (created with ROLE and the tenants if new); the
    /// token is printed once.
    Create {
        /// The principal's name, recorded as `submitted_by` on what it submits.
        #[arg(long)]
        principal: String,
        /// agent, approver, operator or admin.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// Limit the token to this tenant (repeat for several), one the principal has; a
        /// new principal is created with them. Without it the token acts for all of the
        /// principal's tenants. Tenants are granted with `fleetctl principal add`.
        #[arg(long = "tenant")]
        tenants: Vec<String>,
        /// How long the token is accepted: a whole number and s, m, h or d (`30d`, `12h`,
        /// `90m`), at most 365d.
        #[arg(long, default_value = "90d", value_parser = TokenLifetime::parse)]
        expires_in: TokenLifetime,
    },
    /// Revoke a token, named by its id (`tok_…`), its prefix (`fleet_` + 8 hex digits) or
    /// the token itself. Requests carrying it are refused from then on.
    Revoke {
        /// tok_…, fleet_ + 8 hex digits, or the whole token.
        token: String,
    },
    /// List tokens (never the tokens themselves), newest first.
    List,
}

pub(crate) fn parse_role(s: &str) -> Result<Role, String> {
    Role::parse(s).ok_or_else(|| format!("{s:?} is not a role: agent, approver, operator or admin"))
}

pub async fn run(store: &Store, command: TokenCommand, format: Format) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create {
            principal,
            role,
            tenants,
            expires_in,
        } => create(store, &principal, role, &tenants, expires_in, format).await,
        TokenCommand::Revoke { token } => revoke(store, &token, format).await,
        TokenCommand::List => list(store, format).await,
    }
}

/// A token from 32 bytes of the operating system's random generator.
pub fn new_token() -> anyhow::Result<Token> {
    let mut bytes = [0u8; TOKEN_SECRET_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
    Ok(Token::from_secret_bytes(&bytes))
}

/// Refuses a tenant that is not an identifier (`fleet_core::access::check_tenant_id`): one
/// no intent could name, or that would not be shown as what it is.
pub(crate) fn check_tenants(tenants: &[String]) -> anyhow::Result<()> {
    for t in tenants {
        check_tenant_id(t).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// What `issue` gives: the token (to show once), its id, the tenants it acts for and when
/// it expires.
pub struct Issued {
    pub token: Token,
    pub token_id: String,
    pub tenants: Vec<String>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// Creates a token limited to `tenants` (a new principal is created with them) that lives
/// the default lifetime, and returns it with its id and the tenants it acts for (for the
/// demo and the tests).
pub async fn issue(
    store: &Store,
    principal: &str,
    role: Role,
    tenants: &[String],
) -> anyhow::Result<(Token, String, Vec<String>)> {
    let issued = issue_for(store, principal, role, tenants, TokenLifetime::DEFAULT).await?;
    Ok((issued.token, issued.token_id, issued.tenants))
}

/// Creates a token for `principal`, limited to `tenants` (none: all of the principal's),
/// accepted for `lifetime`.
pub async fn issue_for(
    store: &Store,
    principal: &str,
    role: Role,
    tenants: &[String],
    lifetime: TokenLifetime,
) -> anyhow::Result<Issued> {
    check_principal_name(principal).map_err(anyhow::Error::msg)?;
    check_tenants(tenants)?;
    let token = new_token()?;
    let token_id = format!("tok_{}", ulid::Ulid::new());
    let new = NewToken {
        token_id: &token_id,
        principal,
        role,
        tenants,
        hash: &token.hash(),
        display_prefix: token.display_prefix(),
        lifetime,
    };
    match store.create_token(&new).await? {
        TokenCreated::Created {
            tenants,
            expires_at,
        } => Ok(Issued {
            token,
            token_id,
            tenants,
            expires_at,
        }),
        TokenCreated::RoleMismatch { existing } => {
            anyhow::bail!("refused: {principal} is a principal with role {existing}, not {role}")
        }
        TokenCreated::Removed => {
            anyhow::bail!(
                "refused: {principal} was removed; `fleetctl principal add` brings it back"
            )
        }
        TokenCreated::TenantsNotGranted { missing } => anyhow::bail!(
            "refused: {principal} does not act for {}; a token is limited to tenants its principal has (`fleetctl principal add --name {principal} --role {role} --tenant …` grants more)",
            missing.join(", ")
        ),
        TokenCreated::NotAnIdentifier { problem } => anyhow::bail!("refused: {problem}"),
        TokenCreated::NoTenants => anyhow::bail!(
            "refused: {principal} is a new principal; name its tenants with --tenant"
        ),
    }
}

async fn create(
    store: &Store,
    principal: &str,
    role: Role,
    tenants: &[String],
    lifetime: TokenLifetime,
    format: Format,
) -> anyhow::Result<()> {
    let issued = issue_for(store, principal, role, tenants, lifetime).await?;
    if format == Format::Json {
        // The one JSON document on stdout: the token with what the note says.
        output::json(&json!({
            "token": issued.token.expose(),
            "token_id": issued.token_id,
            "principal": principal,
            "role": role.as_str(),
            "tenants": issued.tenants,
            "limited": !tenants.is_empty(),
            "expires_at": issued.expires_at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        }));
        eprintln!("Keep the token now: it is shown once, and only its hash is stored.");
        return Ok(());
    }
    println!("{}", issued.token.expose());
    let scope = if tenants.is_empty() {
        "all of the principal's"
    } else {
        "limited to"
    };
    // On stderr with the note: stdout carries the token alone, so `$(fleetctl token
    // create …)` and `| head -1` take it and nothing else.
    eprintln!(
        "id {}, principal {principal} ({role}), tenants ({scope}) {}, expires {}",
        issued.token_id,
        issued.tenants.join(", "),
        issued.expires_at.format("%Y-%m-%dT%H:%M:%SZ")
    );
    eprintln!("Keep the token now: it is shown once, and only its hash is stored.");
    Ok(())
}

async fn revoke(store: &Store, name: &str, format: Format) -> anyhow::Result<()> {
    // Given the token itself, it is found by its hash (it is never sent anywhere else).
    let hash = TokenHash::of_presented(name);
    match store.revoke_token(name, hash.as_ref()).await? {
        TokenRevoked::Revoked {
            token_id,
            principal,
        } => output::result(
            format,
            || json!({"token_id": token_id, "principal": principal, "revoked": true, "already_revoked": false}),
            || format!("revoked {token_id} of {principal}"),
        ),
        TokenRevoked::AlreadyRevoked { token_id } => output::result(
            format,
            || json!({"token_id": token_id, "revoked": true, "already_revoked": true}),
            || format!("{token_id} was already revoked"),
        ),
        TokenRevoked::NotFound => anyhow::bail!("no token is named {}", shown(name)),
        TokenRevoked::Ambiguous(n) => {
            anyhow::bail!("{n} tokens start with {name}: name one by its id (fleetctl token list)")
        }
    }
    Ok(())
}

/// What may be echoed of a name given on the command line: never a whole token.
fn shown(name: &str) -> &str {
    match TokenHash::of_presented(name) {
        Some(_) => "that token",
        None => name,
    }
}

async fn list(store: &Store, format: Format) -> anyhow::Result<()> {
    let tokens = store.list_tokens().await?;
    let state_of = |t: &fleet_store::TokenListing| {
        if t.revoked_at.is_some() {
            "revoked"
        } else if t.expired {
            "expired"
        } else {
            "active"
        }
    };
    if format == Format::Json {
        let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let rows: Vec<_> = tokens
            .iter()
            .map(|t| {
                json!({
                    "token_id": t.token_id,
                    "prefix": t.display_prefix,
                    "principal": t.principal,
                    "role": t.role.as_str(),
                    "state": state_of(t),
                    "created_at": at(t.created_at),
                    "expires_at": at(t.expires_at),
                    "last_used_at": t.last_used_at.map(at),
                    "tenants": t.tenants,
                    "limited": t.limited,
                })
            })
            .collect();
        output::json(&json!({ "tokens": rows }));
        return Ok(());
    }
    let minute = |at: chrono::DateTime<chrono::Utc>| at.format("%Y-%m-%d %H:%M").to_string();
    crate::say!(
        "{:<30} {:<15} {:<24} {:<9} {:<8} {:<17} {:<17} {:<17} tenants",
        "id",
        "prefix",
        "principal",
        "role",
        "state",
        "created",
        "expires",
        "last used"
    );
    for t in &tokens {
        let state = state_of(t);
        let last_used = t.last_used_at.map_or("never".to_owned(), minute);
        let limited = if t.limited { " (limited)" } else { "" };
        crate::say!(
            "{:<30} {:<15} {:<24} {:<9} {:<8} {:<17} {:<17} {:<17} {}{limited}",
            t.token_id,
            t.display_prefix,
            t.principal,
            t.role,
            state,
            minute(t.created_at),
            minute(t.expires_at),
            last_used,
            t.tenants.join(",")
        );
    }
    Ok(())
}
