//! The one provider call of a claim, as the action's catalogue entry says its effect comes
//! about: a keyed create or a conditional update is sent (and sent again only while it
//! provably never left); a searched create searches first. The request comes from the
//! provider's adapter, built from the approved snapshot alone, so every attempt sends the
//! same body (and key); the answer is classified as the provider's answers read (the
//! catalogue entry's rules, or the provider's own, e.g. Stripe's).

use std::time::Duration;

use fleet_core::outcome::settle_conflict;
use fleet_core::payee::PayeeEvidence;
use fleet_core::throttle;
use fleet_core::{ActionSpec, AttemptOutcome, CallResult, Effect, OpRef, Outcome};
use fleet_providers::{Operation, Provider, Request};
use fleet_store::{AttemptRecord, OperationRow, StoreError};
use tokio::time::Instant;
use tracing::{info, warn};

use crate::handler::ExecuteHandler;
use crate::lease;

const NOT_SENT_BACKOFF: Duration = Duration::from_millis(200);

/// Everything one call needs, built before the lease keeper starts.
pub(crate) struct Call<'a> {
    /// The operation, by tenant and id.
    pub key: OpRef<'a>,
    pub spec: &'static ActionSpec,
    pub op: Operation<'a>,
    pub provider: &'a Provider,
    pub request: Request,
}

impl ExecuteHandler {
    /// The call `row` makes; `None` when the stored snapshot does not make one (prepare
    /// validated this shape: reaching here is a bug, never a reason to guess).
    pub(crate) fn call_of<'a>(&'a self, row: &'a OperationRow) -> Option<Call<'a>> {
        let action = row.action;
        let op = Operation {
            action,
            tenant: &row.tenant_id,
            subject: row.subject(),
            idempotency_key: row.idempotency_key.as_str(),
            // The version the approver was shown: a payee changed since is refused.
            payee_version: row
                .payee
                .as_ref()
                .and_then(PayeeEvidence::from_json)
                .and_then(|p| p.version()),
        };
        let provider = self.deps.providers.serving(&op)?;
        let request = provider.request(&op).ok()?;
        Some(Call {
            key: row.key(),
            spec: action.spec(),
            op,
            provider,
            request,
        })
    }

    /// The one provider call of this claim.
    pub(crate) async fn call(
        &self,
        call: &Call<'_>,
        fence: i64,
    ) -> Result<(Outcome, AttemptRecord), StoreError> {
        if call.spec.effect == Effect::SearchedCreate {
            return self.create_safely(call, fence).await;
        }
        let sent = self.send_until_admitted(call).await;
        let mut outcome = call.provider.classify(&call.op, &sent);
        if matches!(outcome, Outcome::Conflict { .. }) {
            // Rare path: an earlier request of ours (under the operation's key) may be
            // what broke the precondition.
            let earlier = self.deps.store.attempts(call.key).await?;
            let earlier: Vec<Option<AttemptOutcome>> = earlier
                .iter()
                .filter(|a| a.fence < fence)
                .map(|a| a.outcome)
                .collect();
            outcome = settle_conflict(outcome, &earlier);
        }
        let record = AttemptRecord::of(&sent, &outcome);
        Ok((outcome, record))
    }

    /// Sends the call's request, and sends it again (same key, same body) after each 429
    /// the provider answers, once the wait it asked for has passed and a slot came,
    /// while the claim has been throttled for less than the lease's trust: a 429 is
    /// refused in front of the provider and saved under no key, so nothing ran, and the
    /// lease keeper holds the row meanwhile. Only an answer the action's classification
    /// calls `NotExecuted` is sent again; every other answer, and the 429 past that
    /// bound, is the call's answer, recorded as any other.
    async fn send_until_admitted(&self, call: &Call<'_>) -> CallResult {
        let patience = lease::give_up_after(self.deps.settings.lease_ttl_ms);
        let mut first_throttled = None;
        loop {
            let sent = self
                .send(|| call.provider.send(&call.op, &call.request))
                .await;
            let Some(retry_after) = throttle::throttled(&sent) else {
                return sent;
            };
            if !matches!(
                call.provider.classify(&call.op, &sent),
                Outcome::NotExecuted { .. }
            ) {
                return sent;
            }
            let since = *first_throttled.get_or_insert_with(Instant::now);
            let Some(wait) = throttle::resend_after(since.elapsed(), retry_after, patience) else {
                warn!(
                    operation_id = call.key.operation_id,
                    throttled_ms = since.elapsed().as_millis() as u64,
                    "still rate limited past the lease's trust; releasing the claim"
                );
                return sent;
            };
            info!(
                operation_id = call.key.operation_id,
                retry_after_ms = wait.as_millis() as u64,
                "rate limited; the same request goes again after the wait"
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// Sends a request; sends it again (same key, same body) only when the previous send
    /// provably never reached the provider, at most `not_sent_retries` times in all.
    pub(crate) async fn send<F, Fut>(&self, send: F) -> CallResult
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = CallResult>,
    {
        let mut sends = 0;
        loop {
            sends += 1;
            let call = send().await;
            let provably_unsent = matches!(call, CallResult::NotSent { .. });
            if !provably_unsent || sends >= self.deps.settings.not_sent_retries {
                return call;
            }
            tokio::time::sleep(NOT_SENT_BACKOFF * sends).await;
        }
    }
}
