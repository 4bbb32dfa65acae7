//! The consumer of `webhooks.ingest`: one event per message, verified here against the
//! provider's signature (the receiver's secrets, the same check as at the edge, see
//! [`crate::signature::Freshness`] for the time window), then handed to
//! [`Store::ingest_webhook`], which deduplicates, links and applies it in one
//! transaction. Nothing on the queue is trusted because it is on the queue: the broker
//! is shared, and an unsigned or forged message is dead-lettered before it can touch a
//! row or write a deduplication record. This file maps what happened to the message's
//! fate, in one place: a message that can never be used is dead-lettered with a reason
//! (its bytes are kept there), a store failure is retried, everything else is acked.

use fleet_broker::{Delivery, Disposition, Handler};
use fleet_core::stripe::accounts::ConnectedAccounts;
use fleet_store::{IngestStore, StoreError, WebhookEvent, WebhookOutcome};
use tracing::{debug, info, warn};

use crate::clock::unix_now;
use crate::envelope::{Envelope, EnvelopeError};
use crate::event::{parse_event, EventError};
use crate::secrets::WebhookSecrets;
use crate::signature::{Freshness, Rejection};
use crate::stripe_event::{event_account, from_other_account, parse_stripe_event};
use crate::stripe_signature::StripeSecret;

/// Why one message could not be ingested.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("not an envelope: {0}")]
    Envelope(#[from] EnvelopeError),
    #[error("unknown provider")]
    UnknownProvider,
    #[error("no valid provider signature: {0}")]
    Signature(#[from] Rejection),
    #[error("unusable event: {0}")]
    Event(#[from] EventError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl IngestError {
    /// The one mapping from an error to the message's fate.
    pub fn disposition(&self) -> Disposition {
        match self {
            IngestError::Envelope(e) => Disposition::dead_letter(e.reason()),
            IngestError::UnknownProvider => Disposition::dead_letter("unknown_provider"),
            // Signed, but too old for its deduplication row to prove it is no replay.
            IngestError::Signature(Rejection::TimestampOutOfTolerance) => {
                Disposition::dead_letter("signature_expired")
            }
            IngestError::Signature(_) => Disposition::dead_letter("signature_invalid"),
            IngestError::Event(e) => Disposition::dead_letter(e.reason()),
            IngestError::Store(_) => Disposition::Retry,
        }
    }
}

pub struct IngestHandler {
    store: IngestStore,
    secrets: WebhookSecrets,
    stripe: Option<StripeSecret>,
    /// The tenants with a Stripe connected account of their own.
    accounts: ConnectedAccounts,
    freshness: Freshness,
}

impl IngestHandler {
    /// `secrets` are the receiver's (`WEBHOOK_SECRETS`); `freshness` is how old a
    /// signature may be when it is consumed.
    pub fn new(store: IngestStore, secrets: WebhookSecrets, freshness: Freshness) -> IngestHandler {
        IngestHandler {
            store,
            secrets,
            stripe: None,
            accounts: ConnectedAccounts::default(),
            freshness,
        }
    }

    /// Also verifies Stripe events with the endpoint's secret (`PAYMENTS_WEBHOOK_SECRET`);
    /// without one, a Stripe-signed message is refused like any forged one.
    pub fn with_stripe(mut self, stripe: Option<StripeSecret>) -> IngestHandler {
        self.stripe = stripe;
        self
    }

    /// Moves a tenant's operations only with events of the account it acts in
    /// (`PAYMENTS_STRIPE_ACCOUNTS`; empty: every tenant on the platform's account).
    pub fn with_accounts(mut self, accounts: ConnectedAccounts) -> IngestHandler {
        self.accounts = accounts;
        self
    }

    /// Ingests one `webhook.v1` message. Safe to call any number of times, concurrently,
    /// with the same message: only the first commit applies it.
    pub async fn ingest(&self, message: &[u8]) -> Result<WebhookOutcome, IngestError> {
        let (envelope, body) = Envelope::parse(message)?;
        let provider = envelope
            .known_provider()
            .ok_or(IngestError::UnknownProvider)?;
        if envelope.is_stripe() {
            return self.ingest_stripe(envelope, body).await;
        }
        let verified = envelope.verify(body, &self.secrets, unix_now(), self.freshness)?;
        let event = parse_event(provider, &verified)?;
        let outcome = self.store.ingest_webhook(&event).await?;
        log(&event.event_id, &event.event_type, &outcome);
        Ok(outcome)
    }
}

impl IngestHandler {
    /// A Stripe event: each refund it reports in its own transaction, deduplicated under
    /// its own id, so a redelivery after a failure part-way applies only what is left.
    /// The outcome returned is the last one.
    async fn ingest_stripe(
        &self,
        envelope: Envelope,
        body: Vec<u8>,
    ) -> Result<WebhookOutcome, IngestError> {
        let verified =
            envelope.verify_stripe(body, self.stripe.as_ref(), unix_now(), self.freshness)?;
        let account = event_account(&verified);
        let mut last = None;
        for event in parse_stripe_event(&verified)? {
            let event = self.in_scope(event, account.as_deref()).await?;
            let outcome = self.store.ingest_webhook(&event).await?;
            log(&event.event_id, &event.event_type, &outcome);
            last = Some(outcome);
        }
        // `refund_reports` never answers an empty list; an event with nothing is unusable.
        last.ok_or(IngestError::Event(EventError::Missing("data.object")))
    }
}

impl IngestHandler {
    /// `event` as it may be applied: unchanged when it comes from the account its
    /// operation's tenant acts in (`ConnectedAccounts::admits`), else stored so that it
    /// changes nothing ([`from_other_account`]). Without connected accounts every tenant
    /// acts on the platform's account, and only its own events are read as they are.
    async fn in_scope(
        &self,
        event: WebhookEvent,
        account: Option<&str>,
    ) -> Result<WebhookEvent, IngestError> {
        let admitted = match account {
            None if self.accounts.is_empty() => true,
            Some(account) if !self.accounts.knows(account) => false,
            _ => match self.store.tenant_of_webhook(&event).await? {
                Some(tenant) => self.accounts.admits(account, &tenant),
                // Nothing the fleet made (its operation always exists first): it must not
                // be linked later by reconcile without this check.
                None => false,
            },
        };
        if admitted {
            return Ok(event);
        }
        info!(event_id = %event.event_id, account, "Stripe event of another account than its operation's tenant's; stored, applies nothing");
        Ok(from_other_account(event))
    }
}

fn log(event_id: &str, event_type: &str, outcome: &WebhookOutcome) {
    match outcome {
        WebhookOutcome::Applied {
            operation_id,
            tenant_id,
            from,
            to,
        } => {
            info!(event_id, event_type, operation_id = %operation_id, tenant_id = %tenant_id, %from, %to, "webhook applied")
        }
        WebhookOutcome::Escalated {
            operation_id,
            tenant_id,
            reason,
        } => {
            warn!(event_id, event_type, operation_id = %operation_id, tenant_id = %tenant_id, reason = reason.as_str(), "webhook recorded and escalated, not applied")
        }
        WebhookOutcome::Unlinked => info!(
            event_id,
            event_type, "webhook stored unlinked: no operation matches it yet"
        ),
        WebhookOutcome::Duplicate {
            same_payload: false,
        } => {
            warn!(
                event_id,
                event_type, "webhook event id seen before with another body; ignored"
            )
        }
        WebhookOutcome::IgnoredTransition { .. }
        | WebhookOutcome::IgnoredType
        | WebhookOutcome::Duplicate { same_payload: true } => {
            debug!(
                event_id,
                event_type,
                outcome = outcome.label(),
                "webhook changes nothing"
            )
        }
    }
}

impl Handler for IngestHandler {
    async fn handle(&self, delivery: Delivery<'_>) -> Disposition {
        match self.ingest(delivery.body).await {
            Ok(_) => Disposition::Ack,
            Err(e) => {
                let disposition = e.disposition();
                match &disposition {
                    Disposition::Retry => {
                        warn!(error = %e, "webhook not ingested; it will be redelivered")
                    }
                    Disposition::DeadLetter { reason } => {
                        warn!(reason = %reason, error = %e, "webhook dead-lettered")
                    }
                    Disposition::Ack | Disposition::Wait { .. } => {}
                }
                disposition
            }
        }
    }
}
