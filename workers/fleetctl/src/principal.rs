//! `fleetctl principal`: who may sign in to the console and act, with which role, for
//! which tenants. A person is matched by the subject the configured OpenID Connect issuer
//! gives them (`--oidc-subject`); bots keep using tokens (`fleetctl token`).

use clap::Subcommand;
use fleet_broker::BrokerConfig;
use fleet_core::access::check_principal_name;
use fleet_core::Role;
use fleet_store::{NewPrincipal, PrincipalAdded, PrincipalRemoved, Store};

use crate::principal_broker::{self, BrokerUserArgs};

#[derive(Subcommand, Debug)]
pub enum PrincipalCommand {
    /// Add a principal, or grant an existing one more tenants (and a subject if it has
    /// none). A removed principal is brought back.
    Add {
        /// Its name, recorded on every decision it makes.
        #[arg(long)]
        name: String,
        /// agent, approver, operator or admin.
        #[arg(long, value_parser = crate::token::parse_role)]
        role: Role,
        /// A tenant it may act for (repeat for several); grants add up.
        #[arg(long = "tenant", required = true)]
        tenants: Vec<String>,
        /// The `sub` claim the OpenID Connect issuer gives this person: what signs them
        /// in to the console.
        #[arg(long)]
        oidc_subject: Option<String>,
        #[command(flatten)]
        broker: BrokerUserArgs,
    },
    /// List principals with their roles, tenants, subjects and active tokens.
    List,
    /// Remove a principal: its tokens are revoked, its console sessions ended, its
    /// tenants and subject taken away, its approver keys revoked and its approvals of
    /// operations not yet started voided (an operation approved with them goes back to
    /// pending). Its name stays in the history; added back, it starts with no key.
    Remove {
        /// The principal's name.
        name: String,
        /// The RabbitMQ management API, where its broker user (if any) is deleted.
        #[arg(
            long,
            env = "RABBITMQ_MANAGEMENT_URL",
            default_value = "http://127.0.0.1:15672"
        )]
        management_url: String,
    },
}

pub async fn run(
    store: &Store,
    broker: &BrokerConfig,
    command: PrincipalCommand,
) -> anyhow::Result<()> {
    match command {
        PrincipalCommand::Add {
            name,
            role,
            tenants,
            oidc_subject,
            broker: broker_args,
        } => {
            let tenants = add(store, &name, role, &tenants, oidc_subject.as_deref()).await?;
            if broker_args.broker {
                principal_broker::give(store, broker, &broker_args, &name, role, &tenants).await?;
            }
            Ok(())
        }
        PrincipalCommand::List => list(store).await,
        PrincipalCommand::Remove {
            name,
            management_url,
        } => {
            let broker_user = store.broker_user_of(&name).await?;
            remove(store, &name).await?;
            match broker_user {
                Some(user) => principal_broker::take_away(broker, &management_url, &user).await,
                None => Ok(()),
            }
        }
    }
}

async fn add(
    store: &Store,
    name: &str,
    role: Role,
    tenants: &[String],
    oidc_subject: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    check_principal_name(name).map_err(anyhow::Error::msg)?;
    crate::token::check_tenants(tenants)?;
    if let Some(sub) = oidc_subject {
        anyhow::ensure!(
            !sub.is_empty() && sub.len() <= 255 && !sub.chars().any(char::is_control),
            "an OpenID Connect subject is 1 to 255 bytes without control characters"
        );
    }
    let new = NewPrincipal {
        name,
        role,
        tenants,
        oidc_subject,
    };
    let tenants = match store.add_principal(&new).await? {
        PrincipalAdded::Added { tenants } => {
            print!("added {name} ({role})");
            tenants
        }
        PrincipalAdded::Updated { tenants } => {
            print!("updated {name} ({role})");
            tenants
        }
        PrincipalAdded::RoleMismatch { existing } => {
            anyhow::bail!("refused: {name} is a principal with role {existing}, not {role}")
        }
        PrincipalAdded::NotAnIdentifier { problem } => anyhow::bail!("refused: {problem}"),
        PrincipalAdded::SubjectMismatch => anyhow::bail!(
            "refused: {name} already signs in as another subject; remove it and add it again to change it"
        ),
        PrincipalAdded::SubjectTaken { by } => {
            anyhow::bail!("refused: that subject already signs in as {by}")
        }
    };
    println!(", tenants {}", tenants.join(", "));
    Ok(tenants)
}

async fn list(store: &Store) -> anyhow::Result<()> {
    crate::say!(
        "{:<24} {:<9} {:<28} {:<32} {:<7} {:<8} tenants",
        "name",
        "role",
        "oidc subject",
        "broker user",
        "tokens",
        "removed"
    );
    for p in store.list_principals().await? {
        let removed = p
            .removed_at
            .map_or("-".to_owned(), |at| at.format("%Y-%m-%d").to_string());
        crate::say!(
            "{:<24} {:<9} {:<28} {:<32} {:<7} {:<8} {}",
            p.name,
            p.role,
            p.oidc_subject.as_deref().unwrap_or("-"),
            p.broker_user.as_deref().unwrap_or("-"),
            p.active_tokens,
            removed,
            p.tenants.join(",")
        );
    }
    Ok(())
}

async fn remove(store: &Store, name: &str) -> anyhow::Result<()> {
    match store.remove_principal(name).await? {
        PrincipalRemoved::Removed {
            tokens_revoked,
            sessions_ended,
            keys_revoked,
            approvals_voided,
        } => println!(
            "removed {name}: {tokens_revoked} token(s) revoked, {sessions_ended} console session(s) ended, \
             {keys_revoked} approver key(s) revoked, {approvals_voided} approval(s) of operations not yet started voided"
        ),
        PrincipalRemoved::AlreadyRemoved => println!("{name} was already removed"),
        PrincipalRemoved::NotFound => anyhow::bail!("no principal is named {name}"),
    }
    Ok(())
}
