//! `fleetctl policy`: which quorum policy is in force, per action and per tenant. The
//! deployment decides, never the agent: `fleetctl migrate` loads the policy files and the
//! defaults `in-force.toml` chooses; an administrator assigns another policy to a tenant
//! (or changes a default) here, over the owner's database connection, and every change is
//! recorded with their name (`policy_changes`). An intent naming any other version is
//! refused `policy_not_in_force`.

use anyhow::bail;
use clap::Subcommand;
use fleet_core::intent::Action;
use fleet_store::{PolicyAssigned, Store};
use serde_json::json;

use crate::args::Format;
use crate::output;

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Put a policy in force for an action: for one tenant (`--tenant`), or as the
    /// default for every tenant without an assignment of its own.
    Assign {
        /// The action it governs (`payment.create`, `refund.create`, …).
        #[arg(long, value_parser = parse_action)]
        action: Action,
        /// The tenant; without it, the deployment's default for the action.
        #[arg(long)]
        tenant: Option<String>,
        /// The policy version (one `fleetctl migrate` loaded).
        policy_version: String,
        /// The administrator's name, recorded with the change.
        #[arg(long, env = "FLEET_ADMIN")]
        by: String,
    },
    /// Take a tenant's own assignment away: the default applies to it again.
    Unassign {
        /// The action whose assignment is taken away.
        #[arg(long, value_parser = parse_action)]
        action: Action,
        /// The tenant whose own assignment is taken away.
        #[arg(long)]
        tenant: String,
        /// The administrator's name, recorded with the change.
        #[arg(long, env = "FLEET_ADMIN")]
        by: String,
    },
    /// List the defaults and every tenant's assignment.
    List,
}

fn parse_action(s: &str) -> Result<Action, String> {
    Action::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Action::ALL.iter().map(|a| a.wire_name()).collect();
        format!("{s:?} is not an action; one of {}", names.join(", "))
    })
}

pub async fn run(store: &Store, command: PolicyCommand, format: Format) -> anyhow::Result<()> {
    match command {
        PolicyCommand::Assign {
            action,
            tenant,
            policy_version,
            by,
        } => {
            let whom = tenant
                .as_deref()
                .map_or("every tenant without its own".to_owned(), |t| {
                    format!("tenant {t}")
                });
            match store
                .assign_policy(tenant.as_deref(), action, &policy_version, &by)
                .await?
            {
                PolicyAssigned::Assigned { previous } => {
                    let was = previous
                        .as_ref()
                        .map_or(String::new(), |p| format!(" (was {p})"));
                    output::result(
                        format,
                        || {
                            json!({"action": action.wire_name(), "tenant_id": tenant, "policy_version": policy_version, "previous": previous})
                        },
                        || {
                            format!(
                                "{policy_version} is in force for {} for {whom}{was}",
                                action.wire_name()
                            )
                        },
                    );
                }
                PolicyAssigned::UnknownPolicy => bail!(
                    "no policy {policy_version:?} is loaded; add its file and run `fleetctl migrate`"
                ),
                PolicyAssigned::ActionNotInPolicy => bail!(
                    "policy {policy_version} has no rules for {}",
                    action.wire_name()
                ),
                PolicyAssigned::NotAnIdentifier { problem } => {
                    bail!("the tenant is not an identifier: {problem}")
                }
            }
        }
        PolicyCommand::Unassign { action, tenant, by } => {
            let unassigned = store.unassign_policy(&tenant, action, &by).await?;
            output::result(
                format,
                || json!({"action": action.wire_name(), "tenant_id": tenant, "unassigned": unassigned}),
                || match unassigned {
                    true => format!(
                        "tenant {tenant} has no policy of its own for {}: the default applies",
                        action.wire_name()
                    ),
                    false => format!(
                        "tenant {tenant} had no policy of its own for {}",
                        action.wire_name()
                    ),
                },
            );
        }
        PolicyCommand::List if format == Format::Json => {
            let rows: Vec<_> = store
                .policies_in_force()
                .await?
                .into_iter()
                .map(|row| {
                    json!({
                        "tenant_id": row.tenant_id,
                        "action": row.action,
                        "policy_version": row.policy_version,
                        "assigned_by": row.assigned_by,
                        "assigned_at": row.assigned_at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    })
                })
                .collect();
            output::json(&json!({ "policies": rows }));
        }
        PolicyCommand::List => {
            println!(
                "{:<24} {:<20} {:<16} {:<20} SINCE",
                "TENANT", "ACTION", "POLICY", "BY"
            );
            for row in store.policies_in_force().await? {
                println!(
                    "{:<24} {:<20} {:<16} {:<20} {}",
                    row.tenant_id.as_deref().unwrap_or("(default)"),
                    row.action,
                    row.policy_version,
                    row.assigned_by,
                    row.assigned_at.format("%Y-%m-%dT%H:%M:%SZ")
                );
            }
        }
    }
    Ok(())
}
