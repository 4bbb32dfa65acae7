//! fleet-webhook-ingest: provider webhooks, signed, deduplicated and order-safe.
//!
//! Two halves, in one binary, scaled separately (`WEBHOOK_MODE`):
//! - the **receiver** ([`receiver`]): `POST /webhooks/{provider}` on `WEBHOOK_ADDR`;
//!   Standard Webhooks verification over the raw bytes ([`signature`], pure), then a
//!   `webhook.v2` envelope ([`envelope`]: the signature headers and the raw body)
//!   published to `webhooks.ingest` with a publisher confirm, then 204; 503 when the
//!   broker does not confirm;
//! - the **consumer** ([`consumer`]): the same signature verified again (nothing on
//!   the queue is trusted for being there), then one transaction per event (dedup
//!   insert, link, the state machine's verdict) in `fleet_store`, plus the
//!   [`retention`] job.
//!
//! Payments spoken as Stripe (`PAYMENTS_PROVIDER=stripe`) add `POST /webhooks/stripe`:
//! Stripe's signature ([`stripe_signature`]) in place of Standard Webhooks', and its
//! refund events read into the same events ([`stripe_event`]).
//!
//! Rows are the truth here too: the receiver stores nothing, and the consumer's only
//! effect is what its transaction committed, so a redelivery at any point is harmless.

mod clock;
pub mod consumer;
pub mod envelope;
pub mod event;
pub mod limits;
pub mod publish;
pub mod receiver;
pub mod retention;
pub mod secrets;
mod series;
pub mod settings;
pub mod signature;
pub mod stripe_event;
pub mod stripe_signature;

use std::sync::Arc;

use fleet_broker::{BrokerConfig, BrokerError, BrokerHealth, Queue};
use fleet_runtime::Readiness;
use fleet_store::IngestStore;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use consumer::{IngestError, IngestHandler};
pub use envelope::{Envelope, Headers, SignatureHeaders, StripeHeaders};
pub use fleet_runtime::ConnectionLimits;
pub use limits::RequestLimits;
pub use publish::IngestPublisher;
pub use receiver::ReceiverState;
pub use secrets::{SecretsError, WebhookSecrets};
pub use settings::{Mode, PaymentsDialect, WebhookSettings, KNOWN_PROVIDERS};
pub use stripe_signature::{StripeSecret, StripeSecretError};

/// Everything `run` needs, built by `main` (or by a test).
pub struct WebhookDeps {
    pub store: IngestStore,
    pub broker: BrokerConfig,
    pub health: BrokerHealth,
    pub readiness: Readiness,
    pub settings: WebhookSettings,
    /// The receiver's bound listener (bound by `main` from `WEBHOOK_ADDR`, or by a test
    /// on port 0). Required when the mode receives.
    pub listener: Option<TcpListener>,
    pub concurrency: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Secrets(#[from] SecretsError),
    #[error(transparent)]
    StripeSecret(#[from] StripeSecretError),
    #[error("PAYMENTS_STRIPE_ACCOUNTS: {0}")]
    StripeAccounts(#[from] fleet_core::stripe::accounts::AccountsError),
    #[error("the receiver needs a bound listener")]
    NoListener,
    #[error("webhook receiver: {0}")]
    Receiver(std::io::Error),
    #[error(transparent)]
    Broker(#[from] BrokerError),
    #[error("a webhook-ingest task failed: {0}")]
    Task(String),
}

/// Runs what `settings.mode` asks for until `shutdown` is cancelled, then drains. If one
/// part fails for good, the others are stopped and the first error is returned.
pub async fn run(deps: WebhookDeps, shutdown: CancellationToken) -> Result<(), RunError> {
    let settings = deps.settings;
    series::series_at_zero(settings.mode);
    let stop = shutdown.child_token();
    let mut tasks: JoinSet<Result<(), RunError>> = JoinSet::new();
    // Both halves need the secrets: the receiver verifies at the edge, the consumer again.
    let secrets = settings.secrets()?;
    let stripe = settings.stripe_secret()?;
    let accounts = settings.stripe_accounts()?;
    if settings.mode.receives() {
        let listener = deps.listener.ok_or(RunError::NoListener)?;
        let publisher = IngestPublisher::new(deps.broker.clone(), deps.health.clone());
        let ready = publisher.clone();
        deps.readiness
            .add("webhook_publisher", Arc::new(move || ready.is_connected()));
        let connector = publisher.clone().keep_connecting(stop.clone());
        tasks.spawn(async move {
            connector.await;
            Ok(())
        });
        let state = ReceiverState::new(
            secrets.clone(),
            publisher.clone(),
            settings.request_limits(),
        )
        .with_stripe(stripe.clone());
        let (connections, until) = (settings.connection_limits(), stop.clone());
        tasks.spawn(async move {
            let served = receiver::serve(listener, state, connections, until).await;
            publisher.close().await;
            served.map_err(RunError::Receiver)
        });
    }
    if settings.mode.consumes() {
        let handler = Arc::new(
            IngestHandler::new(deps.store.clone(), secrets, settings.consumer_freshness())
                .with_stripe(stripe)
                .with_accounts(accounts),
        );
        let (broker, health, concurrency, until) = (
            deps.broker.clone(),
            deps.health.clone(),
            deps.concurrency,
            stop.clone(),
        );
        tasks.spawn(async move {
            Ok(fleet_broker::consume_with_health(
                broker,
                Queue::WebhooksIngest,
                handler,
                concurrency,
                until,
                &health,
            )
            .await?)
        });
        let policy = retention::Retention {
            older_than_s: settings.webhook_retention_s,
            batch: settings.webhook_retention_batch,
            interval: settings.retention_interval(),
        };
        let (store, until) = (deps.store.clone(), stop.clone());
        tasks.spawn(async move {
            retention::run(store, policy, until).await;
            Ok(())
        });
    }
    let mut result = Ok(());
    while let Some(joined) = tasks.join_next().await {
        let ended = joined.unwrap_or_else(|e| Err(RunError::Task(e.to_string())));
        if let Err(e) = ended {
            tracing::error!(error = %e, "webhook-ingest is stopping");
            stop.cancel();
            if result.is_ok() {
                result = Err(e);
            }
        }
    }
    result
}
