//! fleet-prepare: turns intent.v1 messages into immutable, pending-approval operations.
//! Its one external call is a read: the payee's lookup in the provider's directory, kept
//! with the operation as evidence (`fleet_intake::payee`). It refuses actions on providers that
//! cannot execute them safely (the capability guard). A message that breaks the contract is dead-lettered at
//! once with its reason and nothing is written for it, as is an intent whose
//! `policy_version` names no quorum policy in force (`POLICY_DIR`). The checks and the write
//! are `fleet_intake`'s, which the HTTP API uses too; this worker adds the queue's own part:
//! who sent the message (`submitter`), the batched write, and the dead-letter.

mod handler;
pub mod series;
pub mod submitter;

use std::sync::Arc;

use fleet_broker::{BrokerConfig, BrokerError, BrokerHealth, Queue};
use fleet_store::PrepareStore;
use tokio_util::sync::CancellationToken;

pub use fleet_core::catalogue::ProviderCapabilities;
pub use fleet_intake::PayeeDirectory;
pub use fleet_intake::{intake, store_intent, CheckedIntent, Intake, IntakeRules, Refusal};
pub use handler::{disposition, disposition_after, PrepareHandler};
pub use submitter::AnonymousIntents;

/// Everything `run` needs, built by `main` (or by a test).
pub struct PrepareDeps {
    pub store: PrepareStore,
    pub broker: BrokerConfig,
    pub health: BrokerHealth,
    pub rules: IntakeRules,
    /// Whether intents from senders no principal speaks as are taken (development).
    pub anonymous: AnonymousIntents,
    /// How long an intent waits, parked, for a payee directory that gives no answer
    /// before it is dead-lettered `payee_directory_unreachable`.
    pub lookup_deadline: std::time::Duration,
    pub concurrency: usize,
}

/// Consumes `intents.prepare` until `shutdown` is cancelled.
pub async fn run(deps: PrepareDeps, shutdown: CancellationToken) -> Result<(), BrokerError> {
    series::series_at_zero();
    if deps.anonymous == AnonymousIntents::Allow {
        tracing::warn!("the queue door takes intents from senders no principal speaks as (PREPARE_ANONYMOUS_INTENTS=allow): for development only");
    }
    let handler = Arc::new(PrepareHandler::new(
        deps.store,
        deps.rules,
        deps.anonymous,
        deps.lookup_deadline,
    ));
    fleet_broker::consume_with_health(
        deps.broker,
        Queue::IntentsPrepare,
        handler,
        deps.concurrency,
        shutdown,
        &deps.health,
    )
    .await
}
