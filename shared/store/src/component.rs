//! What each component may do with the store, visible in the types.
//!
//! The database gives every component its own role and grants that role only what the
//! component does (`roles.rs`). A handle on the store carries the same boundary:
//! [`StoreAs<R>`](crate::StoreAs) is the store as component `R` (a marker type below), and
//! each group of methods is implemented only for the components that may use it
//! (`impl<R: ClaimAndCall> StoreAs<R> { … }`). So fleet-execute, which holds an
//! [`ExecuteStore`](crate::ExecuteStore), cannot even name `approve`, and a reader of a
//! worker sees from its store's type what the worker may change.
//!
//! The types narrow what the code can ask; the grants decide what the database does. The
//! two are kept equal by a test that asks Postgres, for every component and every
//! capability it is given here, whether the component's role holds each privilege the
//! capability's statements need ([`Capability::privileges`]), and that no component's role
//! holds what only the owner may do.
//!
//! The owner (whoever migrates: `fleetctl`, the tests, the benchmark) holds every
//! capability: [`Store`](crate::Store) is `StoreAs<Owner>`.

use crate::DbRole;

/// A component the store can be held as.
pub trait Component: Send + Sync + 'static {
    /// The database role the component logs in as (`None`: the owner).
    const ROLE: Option<DbRole>;
}

/// The database owner: migrations, the operator's administration, tests.
#[derive(Debug)]
pub enum Owner {}
/// fleet-api: intake, decisions, the console, sign-in.
#[derive(Debug)]
pub enum Api {}
/// fleet-prepare: intake from the queue.
#[derive(Debug)]
pub enum Prepare {}
/// fleet-execute: claims, attempts, outcomes.
#[derive(Debug)]
pub enum Execute {}
/// fleet-reconcile: lookups, sweeps, audits, gauges.
#[derive(Debug)]
pub enum Reconcile {}
/// fleet-webhook-ingest: verified provider events.
#[derive(Debug)]
pub enum WebhookIngest {}
/// fleet-relay: the outbox.
#[derive(Debug)]
pub enum Relay {}

/// One privilege a capability's statements need: on a table (or one of its columns), or
/// on a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    Table(&'static str, &'static str),
    Column(&'static str, &'static str, &'static str),
    Function(&'static str),
}

/// Declares the capabilities: a marker trait each, the privileges it needs, and which
/// components hold it. One table, so the types and the grant check cannot drift apart.
macro_rules! capabilities {
    ($(
        $(#[$doc:meta])*
        $cap:ident [$($needs:ident)*] => [$($privilege:expr),* $(,)?] for [$($component:ident),*];
    )*) => {
        $(
            $(#[$doc])*
            pub trait $cap: Component $(+ $needs)* {}
            impl $cap for Owner {}
            $(impl $cap for $component {})*
        )*

        /// Every capability, by name, for the grant check and for documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Capability { $($cap),* }

        impl Capability {
            pub const ALL: &'static [Capability] = &[$(Capability::$cap),*];

            /// What the capability's statements need of the database.
            pub fn privileges(self) -> &'static [Privilege] {
                match self { $(Capability::$cap => const { &[$($privilege),*] }),* }
            }

            /// The components (besides the owner) that hold it.
            pub fn holders(self) -> &'static [DbRole] {
                match self { $(Capability::$cap => const { &[$(<$component as Component>::ROLE.unwrap()),*] }),* }
            }
        }
    };
}

use Privilege::{Column, Function, Table};

capabilities! {
    /// Read operations, their attempts and their history.
    ReadOperations [] => [
        Table("operations", "SELECT"),
        Table("operation_events", "SELECT"),
        Table("attempts", "SELECT"),
    ] for [Api, Prepare, Execute, Reconcile, WebhookIngest];
    /// Move an operation by a fenced compare-and-set, writing its history row.
    MoveOperations [ReadOperations] => [
        Column("operations", "status", "UPDATE"),
        Column("operations", "result", "UPDATE"),
        Column("operation_events", "reason", "INSERT"),
    ] for [Api, Prepare, Execute, Reconcile, WebhookIngest];
    /// Store validated intents (and read what intake's risk cues and object checks read).
    StoreIntents [ReadOperations] => [
        Column("operations", "payload", "INSERT"),
        Column("operations", "payee", "INSERT"),
        Column("operations", "risk", "INSERT"),
        Column("operations", "signatures_required", "INSERT"),
        Function("fleet_policy_in_force(text, text)"),
        Table("paid_payees", "SELECT"),
        Table("paid_payee_amounts", "SELECT"),
        Table("paid_accounts", "SELECT"),
        Table("charged_cards", "SELECT"),
        Table("charged_customer_amounts", "SELECT"),
    ] for [Api, Prepare];
    /// Tell who submitted an intent by the broker user that published it.
    IdentifyQueueSubmitters [] => [
        Column("principals", "broker_user", "SELECT"),
        Table("principal_tenants", "SELECT"),
    ] for [Prepare, Api];
    /// Approve or reject an operation's hash, with the approver's signature.
    DecideApprovals [MoveOperations] => [
        Column("operations", "approval_status", "UPDATE"),
        Column("operations", "approved_hash", "UPDATE"),
        Column("approvals", "signature", "INSERT"),
        Table("approver_keys", "SELECT"),
        Function("fleet_quorum_count(text, text)"),
    ] for [Api];
    /// Make, read and revoke standing mandates, and revoke one approval: through the
    /// owner's functions only (no component role writes the tables).
    GrantMandates [] => [
        Table("mandates", "SELECT"),
        Table("mandate_uses", "SELECT"),
        Function("fleet_mandate_create(jsonb, text, text, text, bytea)"),
        Function("fleet_mandate_revoke(text, text, text)"),
        Function("fleet_mandate_pending(text, integer)"),
        Function("fleet_approval_revoke(text, text, text, text)"),
        Function("fleet_mandate_rule(text, text)"),
    ] for [Api];
    /// Approve several operations with one signed statement (migrations/0064):
    /// through the owner's function only.
    ApproveBatches [] => [
        Table("approval_batches", "SELECT"),
        Function("fleet_record_batch(jsonb, text, text, text, bytea, text)"),
    ] for [Api];
    /// Read the records of an operation's evidence bundle (migrations/0069): through the
    /// owner's function only, which reads what the API's grants do not (the policy's
    /// text, the attempts' answers).
    ReadEvidence [] => [
        Function("fleet_operation_evidence(text, text)"),
    ] for [Api];
    /// Settle an operation by an operator's decision, or dispute it.
    SettleByOperator [MoveOperations] => [
        Column("operations", "resolved_at", "UPDATE"),
    ] for [Api];
    /// Know who is speaking: API tokens, console sessions, OpenID Connect subjects.
    Authenticate [] => [
        Table("principals", "SELECT"),
        Table("api_tokens", "SELECT"),
        Column("api_tokens", "last_used_at", "UPDATE"),
        Table("console_sessions", "SELECT"),
        Table("console_sessions", "DELETE"),
    ] for [Api];
    /// What the console and the operations API show: views, inboxes, queues, waits.
    ReadViews [ReadOperations] => [
        Table("approvals", "SELECT"),
    ] for [Api];
    /// Register an approver's passkey: the ceremony, up to an operator's acceptance.
    RegisterPasskeys [] => [
        Table("passkey_requests", "SELECT"),
        Column("passkey_requests", "ceremony", "INSERT"),
        Column("passkey_requests", "public_key", "UPDATE"),
    ] for [Api];
    /// Claim approved operations with a fenced lease, record attempts, read approvals'
    /// signatures.
    ClaimAndCall [MoveOperations] => [
        Column("operations", "fence", "UPDATE"),
        Column("operations", "attempts", "UPDATE"),
        Column("attempts", "worker", "INSERT"),
        Column("attempts", "outcome", "UPDATE"),
        // The send mark: false with the claim, true right before the request goes out.
        Column("attempts", "request_sent", "INSERT"),
        Column("attempts", "request_sent", "UPDATE"),
        Table("approvals", "SELECT"),
        Table("approver_keys", "SELECT"),
        Function("fleet_quorum_met(text, text)"),
        Function("fleet_approver_standing(text, text)"),
        // A pending operation inside a standing mandate is approved by it in the claim's
        // transaction (migrations/0061_mandates.sql).
        Function("fleet_mandate_approve(text[], text[])"),
        Function("fleet_mandate_holds(text, text)"),
        // A call under a mandate holds it until its answer (migrations/0068).
        Function("fleet_mandate_hold(text, text, bigint)"),
        Function("fleet_mandate_unhold(text)"),
        Table("mandates", "SELECT"),
    ] for [Execute];
    /// Share a provider's request rate between replicas.
    RateProviders [] => [
        Table("provider_rates", "SELECT"),
        Function("fleet_reserve_provider_slots(text, double precision, integer, double precision)"),
    ] for [Execute, Reconcile];
    /// Take slots of a provider's shared schedule for the intake's payee lookups, after
    /// approved operations' calls, and report their 429s.
    PaceIntake [] => [
        Table("provider_rates", "SELECT"),
        Function("fleet_reserve_intake_slots(text, double precision, integer, double precision, double precision)"),
        Function("fleet_provider_throttled(text, double precision, double precision, double precision, double precision)"),
    ] for [Api, Prepare];
    /// Sweep expired leases and approvals, look up uncertain outcomes, audit, count.
    SweepAndLookUp [MoveOperations] => [
        Column("operations", "next_lookup_at", "UPDATE"),
        Column("operations", "audited_at", "UPDATE"),
        Column("attempts", "outcome", "UPDATE"),
        Function("fleet_expire_approval(text, text)"),
        // Pending operations a standing mandate could approve, to ring execute for
        // (migrations/0063_mandate_sweep.sql).
        Function("fleet_mandate_due(integer, double precision)"),
    ] for [Reconcile];
    /// Apply provider events that arrived before their operation was known.
    ApplyWebhooks [MoveOperations] => [
        Table("webhook_events", "SELECT"),
        Column("webhook_events", "operation_id", "UPDATE"),
        Column("webhook_events", "outcome", "UPDATE"),
    ] for [Reconcile];
    /// Store verified provider events (applying each to its operation), and prune them
    /// after their retention.
    IngestWebhooks [MoveOperations] => [
        Column("webhook_events", "event_id", "INSERT"),
        Table("webhook_events", "DELETE"),
    ] for [WebhookIngest];
    /// Publish the outbox and prune what was published.
    RelayOutbox [] => [
        Table("operation_outbox", "SELECT"),
        Column("operation_outbox", "published_at", "UPDATE"),
        Table("operation_outbox", "DELETE"),
    ] for [Relay];
    /// Keep the messages taken from the dead-letter queues (migrations/0072): through the
    /// owner's function only; count the unresolved ones for a gauge.
    KeepDeadLetters [] => [
        Function("fleet_keep_dead_letter(text, bytea, jsonb, text, text, timestamp with time zone, text)"),
        Column("dead_letters", "queue", "SELECT"),
        Column("dead_letters", "resolved_at", "SELECT"),
    ] for [Relay];
    /// Notify approvers of operations waiting for them (migrations/0077): plan, claim and
    /// settle notifications, and name the tenants that have a channel (0088), through the
    /// owner's functions only.
    NotifyApprovers [] => [
        Function("fleet_notify_plan(integer, jsonb, double precision)"),
        Function("fleet_notify_claim(integer, double precision)"),
        Function("fleet_notify_sent(bigint)"),
        Function("fleet_notify_retry(bigint, double precision, text)"),
        Function("fleet_notify_drop(bigint, text)"),
        Function("fleet_notify_tenants(text[])"),
        Table("approval_notifications", "SELECT"),
    ] for [Relay];
    /// Read the kept dead letters and record an operator's replay or discard: through the
    /// owner's function only, which also resolves the row.
    ReadDeadLetters [] => [
        Table("dead_letters", "SELECT"),
        Table("dead_letter_actions", "SELECT"),
        Function("fleet_dead_letter_act(bigint, text, text, text, text, text)"),
    ] for [Api];
    /// Administer principals, tokens, approver keys, broker users and the policies in force:
    /// the owner's alone.
    Administer [] => [
        Table("principals", "INSERT"),
        Table("api_tokens", "INSERT"),
        Table("approver_keys", "INSERT"),
        Column("principals", "broker_user", "UPDATE"),
        Table("policies", "INSERT"),
        Table("policy_defaults", "INSERT"),
        Table("policy_assignments", "INSERT"),
    ] for [];
}

impl Component for Owner {
    const ROLE: Option<DbRole> = None;
}
impl Component for Api {
    const ROLE: Option<DbRole> = Some(DbRole::Api);
}
impl Component for Prepare {
    const ROLE: Option<DbRole> = Some(DbRole::Prepare);
}
impl Component for Execute {
    const ROLE: Option<DbRole> = Some(DbRole::Execute);
}
impl Component for Reconcile {
    const ROLE: Option<DbRole> = Some(DbRole::Reconcile);
}
impl Component for WebhookIngest {
    const ROLE: Option<DbRole> = Some(DbRole::WebhookIngest);
}
impl Component for Relay {
    const ROLE: Option<DbRole> = Some(DbRole::Relay);
}

impl Capability {
    /// The capabilities `role` holds.
    pub fn of(role: DbRole) -> Vec<Capability> {
        Capability::ALL
            .iter()
            .copied()
            .filter(|c| c.holders().contains(&role))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn administration_belongs_to_no_component() {
        assert!(Capability::Administer.holders().is_empty());
    }

    #[test]
    fn every_component_holds_something_and_only_the_api_decides() {
        for role in DbRole::ALL {
            assert!(!Capability::of(role).is_empty(), "{role:?} holds nothing");
        }
        assert_eq!(Capability::DecideApprovals.holders(), &[DbRole::Api]);
        assert_eq!(Capability::ClaimAndCall.holders(), &[DbRole::Execute]);
    }
}
