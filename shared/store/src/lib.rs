//! Postgres access for the fleet: the operation log, attempts, events, leases and fences.
//! Every runtime query goes through one deadpool-postgres pool over tokio-postgres; sqlx is
//! used only for its embedded migrator, which owns `migrations/`.

mod approval;
mod approval_batch;
mod approver_keys;
mod audit;
mod authz_facts;
mod batch;
mod broker_users;
mod charge_history;
mod claim;
pub mod component;
mod connector;
mod console_reads;
mod dead_letters;
mod error;
mod evidence;
mod index_reads;
mod intake_rates;
mod lost_claims;
mod mandate_hold;
mod mandates;
mod many_rows;
mod migrate;
mod notifications;
mod object_owners;
mod operator;
mod outbox;
mod passkeys;
mod payment_history;
mod policies;
mod pool;
mod postgres_url;
mod prepare;
mod principal_admin;
mod principals;
mod provider_rates;
mod prune_cursor;
mod rate_slots;
mod read;
mod role_owner;
mod roles;
mod rows;
mod session_defaults;
mod sessions;
mod signed_approvals;
mod sweep;
mod transition;
mod views;
mod webhooks;

pub use approval::{ApprovalOutcome, RejectOutcome};
pub use approval_batch::BatchRecorded;
pub use approver_keys::{KeyAdded, KeyListing, KeyRemoved};
pub use audit::AuditDelays;
pub use authz_facts::StoredFacts;
pub use batch::{settle_batch, BatchError};
pub use broker_users::BrokerUserSet;
pub use charge_history::CHARGED_BEFORE;
pub use claim::{Claim, ClaimedOperation};
pub use console_reads::{ApprovalGiven, ConsoleOperation, OperationSearch, OPERATOR_QUEUE};
pub use dead_letters::{DeadLetterAction, DeadLetterFilter, DeadLetterRow, NewDeadLetter};
pub use error::StoreError;
pub use intake_rates::{IntakeReserved, INTAKE_HORIZON};
pub use lost_claims::{ExpiredLeases, LostClaim};
pub use mandate_hold::MandateHold;
pub use mandates::{MandateCreated, MandateEvidence, MandateRow};
pub use migrate::{create_database_if_missing, drop_database, migrate, set_role_passwords};
pub use notifications::ClaimedNotification;
pub use operator::{DecisionOutcome, Resolve};
pub use outbox::{OutboxGauges, OutboxRow, Relayed};
pub use passkeys::{ActivePasskey, PasskeyRequest, VerifiedPasskey, CEREMONY_TTL_S};
pub use payment_history::{PAID_BEFORE, PAYMENT_RISK};
pub use policies::{PoliciesLoaded, PolicyAssigned, PolicyInForce, FROM_POLICY_FILES};
pub use pool::{
    pool_builder, ApiStore, ExecuteStore, IngestStore, PrepareStore, ReconcileStore, RelayStore,
    Store, StoreAs, Unready, POOL_GROW_EVERY,
};
pub use postgres_url::{writable_server, PostgresUrl};
pub use prepare::{PrepareOutcome, Requirement};
pub use principal_admin::{NewPrincipal, PrincipalAdded, PrincipalListing, PrincipalRemoved};
pub use principals::{NewToken, Principal, TokenCheck, TokenCreated, TokenListing, TokenRevoked};
pub use provider_rates::{ProviderSchedule, Reserved};
pub use prune_cursor::PruneCursor;
pub use read::{ApprovalGauges, FleetGauges, APPROVAL_GAUGES, FLEET_GAUGES};
pub use roles::{role_url, DbRole, RolePrefix, ROLE_PREFIX_SETTING};
pub use rows::{AttemptRecord, AttemptRow, EventRow, OperationRow};
pub use signed_approvals::SignedApprovals;
pub use sweep::AttemptAgesMs;
pub(crate) use transition::transition_in;
pub use transition::{Transition, TransitionOutcome};
pub use views::{PageKey, ViewFilter};
pub use webhooks::{
    check_identity, decide as decide_webhook, EventKind, ObjectIdentity, Reported, ReportedObject,
    RowIdentity, StoredWebhook, WebhookDecision, WebhookEvent, WebhookOutcome,
    MIN_WEBHOOK_RETENTION_S, WEBHOOK_ACTOR,
};
