//! Which quorum policy governs an operation: the deployment's decision, kept where no
//! component may write it (migrations/0053_policy_in_force.sql).
//!
//! `fleetctl migrate` loads the policy files into `policies` and seeds the default policy
//! in force for each action from them ([`StoreAs::load_policies`]); an administrator assigns
//! another policy to one tenant and action (`fleetctl policy assign`,
//! [`StoreAs::assign_policy`]). Intake asks which version is in force
//! ([`StoreAs::policy_in_force`]) before judging an intent, and the database asks again
//! when the operation is inserted, deriving the least quorum itself.

use chrono::{DateTime, Utc};
use fleet_core::access::check_tenant_id;
use fleet_core::intent::Action;
use fleet_core::PolicySet;

use crate::component::{Administer, StoreIntents};
use crate::{StoreAs, StoreError};

/// Who set a default that came from the policy files rather than from a person.
pub const FROM_POLICY_FILES: &str = "in-force.toml";

/// What [`StoreAs::load_policies`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoliciesLoaded {
    /// Versions stored for the first time.
    pub added: Vec<String>,
    /// Versions whose rules or text changed.
    pub changed: Vec<String>,
    /// Actions whose default the files set or changed.
    pub defaults_set: Vec<String>,
    /// Actions several policies name with no default in the files nor set by a person:
    /// intents for them are refused until an administrator chooses.
    pub undecided: Vec<String>,
}

/// One row of `fleetctl policy list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyInForce {
    /// `None`: the default for every tenant without an assignment.
    pub tenant_id: Option<String>,
    pub action: String,
    pub policy_version: String,
    pub assigned_by: String,
    pub assigned_at: DateTime<Utc>,
}

/// What [`StoreAs::assign_policy`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyAssigned {
    Assigned {
        previous: Option<String>,
    },
    /// The deployment has no such policy version.
    UnknownPolicy,
    /// The policy has no rules for the action.
    ActionNotInPolicy,
    /// The tenant id is not an identifier.
    NotAnIdentifier {
        problem: String,
    },
}

impl<R: StoreIntents> StoreAs<R> {
    /// The policy version in force for `tenant_id` and `action`: the tenant's assignment,
    /// else the deployment's default; `None` when neither exists. Prepared once per
    /// connection: every intake asks it, so it costs one round trip, not a parse and a
    /// plan each time.
    pub async fn policy_in_force(
        &self,
        tenant_id: &str,
        action: Action,
    ) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let read = client
            .prepare_cached("SELECT fleet_policy_in_force($1, $2)")
            .await?;
        let row = client
            .query_one(&read, &[&tenant_id, &action.wire_name()])
            .await?;
        Ok(row.get(0))
    }
}

impl<R: Administer> StoreAs<R> {
    /// Stores every policy of `set` (their rules as the database judges by, and their
    /// text), and for each action the default the files choose, unless an administrator
    /// chose one. One transaction; every change lands in `policy_changes`.
    pub async fn load_policies(
        &self,
        set: &PolicySet,
        actor: &str,
    ) -> Result<PoliciesLoaded, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT set_config('fleet.actor', $1, true)", &[&actor])
            .await?;
        let mut loaded = PoliciesLoaded::default();
        for policy in set.policies() {
            let row = tx
                .query_one(
                    "WITH before AS (SELECT rules, source_text FROM policies WHERE policy_version = $1)
                     , upsert AS (
                        INSERT INTO policies (policy_version, rules, source_text) VALUES ($1, $2, $3)
                        ON CONFLICT (policy_version) DO UPDATE SET rules = EXCLUDED.rules,
                            source_text = EXCLUDED.source_text, loaded_at = now()
                        WHERE (policies.rules, policies.source_text)
                              IS DISTINCT FROM (EXCLUDED.rules, EXCLUDED.source_text)
                        RETURNING 1)
                     SELECT (SELECT count(*) FROM before) AS existed, (SELECT count(*) FROM upsert) AS written",
                    &[&policy.version(), &policy.rules(), &policy.text()],
                )
                .await?;
            let (existed, written): (i64, i64) = (row.get(0), row.get(1));
            match (existed, written) {
                (0, _) => loaded.added.push(policy.version().to_owned()),
                (_, 1) => loaded.changed.push(policy.version().to_owned()),
                _ => {}
            }
        }
        let actions: std::collections::BTreeSet<Action> =
            set.policies().flat_map(|p| p.actions()).collect();
        for action in actions {
            let Some(version) = set.default_in_force(action) else {
                let chosen = tx
                    .query_opt(
                        "SELECT 1 FROM policy_defaults WHERE action = $1 AND assigned_by <> $2",
                        &[&action.wire_name(), &FROM_POLICY_FILES],
                    )
                    .await?;
                if chosen.is_none() {
                    loaded.undecided.push(action.wire_name().to_owned());
                }
                continue;
            };
            // The files' choice replaces only a choice the files made before.
            let set_now = tx
                .execute(
                    "INSERT INTO policy_defaults (action, policy_version, assigned_by) VALUES ($1, $2, $3)
                     ON CONFLICT (action) DO UPDATE SET policy_version = EXCLUDED.policy_version,
                         assigned_at = now()
                     WHERE policy_defaults.assigned_by = $3
                       AND policy_defaults.policy_version <> EXCLUDED.policy_version",
                    &[&action.wire_name(), &version, &FROM_POLICY_FILES],
                )
                .await?;
            if set_now == 1 {
                loaded.defaults_set.push(action.wire_name().to_owned());
            }
        }
        tx.commit().await?;
        Ok(loaded)
    }

    /// Puts `policy_version` in force for `action`: for one tenant, or (`tenant_id`
    /// `None`) as the default for every tenant without an assignment. Recorded in
    /// `policy_changes` with `actor`.
    pub async fn assign_policy(
        &self,
        tenant_id: Option<&str>,
        action: Action,
        policy_version: &str,
        actor: &str,
    ) -> Result<PolicyAssigned, StoreError> {
        if let Some(Err(problem)) = tenant_id.map(check_tenant_id) {
            return Ok(PolicyAssigned::NotAnIdentifier { problem });
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT set_config('fleet.actor', $1, true)", &[&actor])
            .await?;
        let Some(rules) = tx
            .query_opt(
                "SELECT rules ? $2 FROM policies WHERE policy_version = $1",
                &[&policy_version, &action.wire_name()],
            )
            .await?
        else {
            return Ok(PolicyAssigned::UnknownPolicy);
        };
        if !rules.get::<_, bool>(0) {
            return Ok(PolicyAssigned::ActionNotInPolicy);
        }
        let previous: Option<String> = match tenant_id {
            Some(tenant) => {
                let previous = tx
                    .query_opt(
                        "SELECT policy_version FROM policy_assignments WHERE tenant_id = $1 AND action = $2",
                        &[&tenant, &action.wire_name()],
                    )
                    .await?
                    .map(|r| r.get(0));
                tx.execute(
                    "INSERT INTO policy_assignments (tenant_id, action, policy_version, assigned_by)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (tenant_id, action) DO UPDATE SET policy_version = EXCLUDED.policy_version,
                         assigned_by = EXCLUDED.assigned_by, assigned_at = now()",
                    &[&tenant, &action.wire_name(), &policy_version, &actor],
                )
                .await?;
                previous
            }
            None => {
                let previous = tx
                    .query_opt(
                        "SELECT policy_version FROM policy_defaults WHERE action = $1",
                        &[&action.wire_name()],
                    )
                    .await?
                    .map(|r| r.get(0));
                tx.execute(
                    "INSERT INTO policy_defaults (action, policy_version, assigned_by) VALUES ($1, $2, $3)
                     ON CONFLICT (action) DO UPDATE SET policy_version = EXCLUDED.policy_version,
                         assigned_by = EXCLUDED.assigned_by, assigned_at = now()",
                    &[&action.wire_name(), &policy_version, &actor],
                )
                .await?;
                previous
            }
        };
        tx.commit().await?;
        Ok(PolicyAssigned::Assigned { previous })
    }

    /// Takes a tenant's own assignment away (the default applies again); whether there
    /// was one.
    pub async fn unassign_policy(
        &self,
        tenant_id: &str,
        action: Action,
        actor: &str,
    ) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT set_config('fleet.actor', $1, true)", &[&actor])
            .await?;
        let removed = tx
            .execute(
                "DELETE FROM policy_assignments WHERE tenant_id = $1 AND action = $2",
                &[&tenant_id, &action.wire_name()],
            )
            .await?;
        tx.commit().await?;
        Ok(removed == 1)
    }

    /// Every default and every tenant's assignment, defaults first.
    pub async fn policies_in_force(&self) -> Result<Vec<PolicyInForce>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT NULL::text AS tenant_id, action, policy_version, assigned_by, assigned_at
                 FROM policy_defaults
                 UNION ALL
                 SELECT tenant_id, action, policy_version, assigned_by, assigned_at
                 FROM policy_assignments
                 ORDER BY tenant_id NULLS FIRST, action",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| PolicyInForce {
                tenant_id: r.get("tenant_id"),
                action: r.get("action"),
                policy_version: r.get("policy_version"),
                assigned_by: r.get("assigned_by"),
                assigned_at: r.get("assigned_at"),
            })
            .collect())
    }
}
