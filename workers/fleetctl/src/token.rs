//! `fleetctl token`: bearer tokens for the HTTP API. A new token is printed once and only
//! its SHA-256 is stored, so a lost token is revoked and replaced, never recovered.

use clap::Subcommand;
use fleet_core::access::{is_principal_name, TOKEN_SECRET_BYTES};
use fleet_core::{Role, Token, TokenHash};
use fleet_store::{NewToken, Store, TokenCreated, TokenRevoked};

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a token for a principal (created with ROLE if new) and grant it the tenants;
    /// the token is printed once.
    Create {
        /// The principal's name, recorded as `submitted_by` on what it submits.
        #[arg(long)]
        principal: String,
        /// agent, approver, operator or admin.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// A tenant the principal may act for (repeat for several). Grants add up: the
        /// principal keeps the tenants it had.
        #[arg(long = "tenant", required = true)]
        tenants: Vec<String>,
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

pub async fn run(store: &Store, command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create {
            principal,
            role,
            tenants,
        } => create(store, &principal, role, &tenants).await,
        TokenCommand::Revoke { token } => revoke(store, &token).await,
        TokenCommand::List => list(store).await,
    }
}

/// A token from 32 bytes of the operating system's random generator.
pub fn new_token() -> anyhow::Result<Token> {
    let mut bytes = [0u8; TOKEN_SECRET_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
    Ok(Token::from_secret_bytes(&bytes))
}

/// Refuses a tenant name the tables would refuse (or that could not be shown safely).
pub(crate) fn check_tenants(tenants: &[String]) -> anyhow::Result<()> {
    for t in tenants {
        anyhow::ensure!(
            !t.is_empty() && t.len() <= 256 && !t.chars().any(char::is_control),
            "{t:?} cannot name a tenant: 1 to 256 bytes, no control characters"
        );
    }
    Ok(())
}

/// Creates a token and returns it with its id (for `create` and the demo).
pub async fn issue(
    store: &Store,
    principal: &str,
    role: Role,
    tenants: &[String],
) -> anyhow::Result<(Token, String, Vec<String>)> {
    anyhow::ensure!(is_principal_name(principal), "{principal:?} cannot name a principal: 1 to 128 letters, digits and ._@:- starting with a letter or digit");
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
    };
    match store.create_token(&new).await? {
        TokenCreated::Created { tenants } => Ok((token, token_id, tenants)),
        TokenCreated::RoleMismatch { existing } => {
            anyhow::bail!("refused: {principal} is a principal with role {existing}, not {role}")
        }
        TokenCreated::Removed => {
            anyhow::bail!(
                "refused: {principal} was removed; `fleetctl principal add` brings it back"
            )
        }
    }
}

async fn create(
    store: &Store,
    principal: &str,
    role: Role,
    tenants: &[String],
) -> anyhow::Result<()> {
    let (token, token_id, tenants) = issue(store, principal, role, tenants).await?;
    println!("{}", token.expose());
    println!(
        "id {token_id}, principal {principal} ({role}), tenants {}",
        tenants.join(", ")
    );
    eprintln!("Keep the token now: it is shown once, and only its hash is stored.");
    Ok(())
}

async fn revoke(store: &Store, name: &str) -> anyhow::Result<()> {
    // Given the token itself, it is found by its hash (it is never sent anywhere else).
    let hash = TokenHash::of_presented(name);
    match store.revoke_token(name, hash.as_ref()).await? {
        TokenRevoked::Revoked {
            token_id,
            principal,
        } => println!("revoked {token_id} of {principal}"),
        TokenRevoked::AlreadyRevoked { token_id } => println!("{token_id} was already revoked"),
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

async fn list(store: &Store) -> anyhow::Result<()> {
    println!(
        "{:<30} {:<15} {:<24} {:<9} {:<26} {:<8} tenants",
        "id", "prefix", "principal", "role", "created", "revoked"
    );
    for t in store.list_tokens().await? {
        let revoked = t
            .revoked_at
            .map_or("-".to_owned(), |at| at.format("%Y-%m-%d %H:%M").to_string());
        println!(
            "{:<30} {:<15} {:<24} {:<9} {:<26} {:<8} {}",
            t.token_id,
            t.display_prefix,
            t.principal,
            t.role,
            t.created_at.format("%Y-%m-%dT%H:%M:%SZ"),
            revoked,
            t.tenants.join(",")
        );
    }
    Ok(())
}
