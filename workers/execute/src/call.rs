//! The one provider call of a claim, as the action's catalogue entry says its effect comes
//! about: a keyed create or a conditional update is sent (and sent again only while it
//! provably never left); a searched create searches first. The request comes from the
//! provider's adapter, built from the approved snapshot alone, so every attempt sends the
//! same body (and key); the answer is classified as the provider's answers read (the
//! catalogue entry's rules, or the provider's own, e.g. Stripe's).

use std::time::Duration;

use fleet_core::outcome::settle_conflict;
use fleet_core::payee::PayeeEvidence;
use fleet_core::{ActionSpec, AttemptOutcome, CallResult, Effect, OpRef, Outcome};
use fleet_providers::{Operation, Provider, Request};
use fleet_store::{AttemptRecord, MandateHold, OperationRow, StoreError};

use crate::admitted::Throttled;
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
    /// The standing mandate this call is made under, held until its answer (the send mark
    /// is written on the holding connection); `None` for an operation people approved.
    pub hold: Option<&'a MandateHold>,
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
            hold: None,
        })
    }

    /// The one provider call of this claim.
    pub(crate) async fn call(
        &self,
        call: &Call<'_>,
        fence: i64,
    ) -> Result<(Outcome, AttemptRecord), StoreError> {
        // One patience with the provider's 429s for all of this claim's requests.
        let mut throttled = Throttled::new(lease::give_up_after(self.deps.settings.lease_ttl_ms));
        if call.spec.effect == Effect::SearchedCreate {
            return self.create_safely(call, fence, &mut throttled).await;
        }
        let sent = self.send_until_admitted(call, fence, &mut throttled).await;
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
