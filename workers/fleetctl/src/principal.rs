//! `fleetctl principal`: who may sign in to the console and act, with which role, for
//! which tenants. A person is matched by the subject the configured OpenID Connect issuer
//! gives them (`--oidc-subject`); bots keep using tokens (`fleetctl token`).

use clap::Subcommand;
use fleet_broker::BrokerConfig;
use fleet_core::access::check_principal_name;
use fleet_core::Role;
use fleet_store::{NewPrincipal, PrincipalAdded, PrincipalRemoved, Store};

use crate::args::Format;
use crate::output;
use crate::principal_broker::{self, BrokerUserArgs};
use serde_json::json;

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
    format: Format,
) -> anyhow::Result<()> {
    match command {
        PrincipalCommand::Add {
            name,
            role,
            tenants,
            oidc_subject,
            broker: broker_args,
        } => {
            let (created, tenants) =
                add(store, &name, role, &tenants, oidc_subject.as_deref()).await?;
            let given = match broker_args.broker {
                true => Some(
                    principal_broker::give(store, broker, &broker_args, &name, role, &tenants)
                        .await?,
                ),
                false => None,
            };
            let verb = if created { "added" } else { "updated" };
            output::result(
                format,
                || {
                    json!({
                        "name": name,
                        "role": role.as_str(),
                        "created": created,
                        "tenants": tenants,
                        "broker_user": given.as_ref().map(|g| g.json.clone()),
                    })
                },
                || {
                    let line = format!("{verb} {name} ({role}), tenants {}", tenants.join(", "));
                    match &given {
                        Some(g) => format!("{line}\n{}", g.lines()),
                        None => line,
                    }
                },
            );
            Ok(())
        }
        PrincipalCommand::List => list(store, format).await,
        PrincipalCommand::Remove {
            name,
            management_url,
        } => {
            let broker_user = store.broker_user_of(&name).await?;
            let mut removed = remove(store, &name).await?;
            if let Some(user) = &broker_user {
                principal_broker::take_away(broker, &management_url, user).await?;
                removed
                    .words
                    .push_str(&format!("\nbroker user {user} deleted"));
            }
            removed.json["broker_user_deleted"] = json!(broker_user);
            output::result(format, || removed.json, || removed.words);
            Ok(())
        }
    }
}

async fn add(
    store: &Store,
    name: &str,
    role: Role,
    tenants: &[String],
    oidc_subject: Option<&str>,
) -> anyhow::Result<(bool, Vec<String>)> {
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
        PrincipalAdded::Added { tenants } => (true, tenants),
        PrincipalAdded::Updated { tenants } => (false, tenants),
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
    Ok(tenants)
}

async fn list(store: &Store, format: Format) -> anyhow::Result<()> {
    if format == Format::Json {
        let rows: Vec<_> = store
            .list_principals()
            .await?
            .into_iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "role": p.role.as_str(),
                    "oidc_subject": p.oidc_subject,
                    "broker_user": p.broker_user,
                    "active_tokens": p.active_tokens,
                    "removed_at": p.removed_at.map(|at| at.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
                    "tenants": p.tenants,
                })
            })
            .collect();
        output::json(&json!({ "principals": rows }));
        return Ok(());
    }
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

/// What `remove` did, in words and as JSON, for the caller to complete and print.
struct Removed {
    words: String,
    json: serde_json::Value,
}

async fn remove(store: &Store, name: &str) -> anyhow::Result<Removed> {
    Ok(match store.remove_principal(name).await? {
        PrincipalRemoved::Removed {
            tokens_revoked,
            sessions_ended,
            keys_revoked,
            approvals_voided,
        } => Removed {
            words: format!(
                "removed {name}: {tokens_revoked} token(s) revoked, {sessions_ended} console session(s) ended, \
                 {keys_revoked} approver key(s) revoked, {approvals_voided} approval(s) of operations not yet started voided"
            ),
            json: json!({
                "name": name,
                "already_removed": false,
                "tokens_revoked": tokens_revoked,
                "sessions_ended": sessions_ended,
                "keys_revoked": keys_revoked,
                "approvals_voided": approvals_voided,
            }),
        },
        PrincipalRemoved::AlreadyRemoved => Removed {
            words: format!("{name} was already removed"),
            json: json!({"name": name, "already_removed": true}),
        },
        PrincipalRemoved::NotFound => anyhow::bail!("no principal is named {name}"),
    })
}
