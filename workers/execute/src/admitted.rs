//! A claim's requests to its provider, each sent until the provider admits it: the one
//! rule for every provider's create, update and search within a claim.
//!
//! A 429 is refused in front of the provider: nothing ran, nothing was saved under the
//! key. So the same request (same key, same body; the same search) goes again once the
//! wait the provider asked for passed and a new slot came, while the lease keeper renews
//! the lease. The claim's patience is counted once for all of its requests (the search
//! before a create and the create share it): past the lease's trust
//! (`fleet_core::throttle::resend_after`), the 429 is the request's answer and the claim
//! is released as any refused call.
//!
//! A side-effecting request is sent behind its attempt's durable send mark
//! (migrations/0060_attempt_send_mark.sql): committed after its rate slot came and right
//! before it is handed to the network, while the lease is live. A claim that dies before
//! that (waiting for its slot, or for a 429's wait) provably sent nothing, and reconcile
//! releases it without a lookup.

use std::future::Future;
use std::time::Duration;

use fleet_core::throttle;
use fleet_core::{CallResult, Outcome};
use fleet_providers::SendGate;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::batches::Batches;
use crate::call::Call;
use crate::deps::ExecuteDeps;
use crate::pause;

const NOT_SENT_BACKOFF: Duration = Duration::from_millis(200);

/// How long one claim has been refused for the provider's rate, against the lease's trust.
pub(crate) struct Throttled {
    since: Option<Instant>,
    patience: Duration,
}

impl Throttled {
    pub(crate) fn new(patience: Duration) -> Self {
        Throttled {
            since: None,
            patience,
        }
    }

    /// After a 429 that asks for `retry_after`: the wait before the same request goes
    /// again, or `None` once waiting would take the claim past its patience.
    fn wait_after(&mut self, retry_after: Duration) -> Option<Duration> {
        let since = *self.since.get_or_insert_with(Instant::now);
        throttle::resend_after(since.elapsed(), retry_after, self.patience)
    }

    fn throttled_ms(&self) -> u64 {
        self.since.map_or(0, |s| s.elapsed().as_millis() as u64)
    }
}

/// Runs `request` until the provider admits it: again after each 429 (`refused` names its
/// wait) while `throttled` allows. Every other answer, and the 429 past that bound, is
/// returned as it came.
pub(crate) async fn until_admitted<T, F, Fut>(
    call: &Call<'_>,
    throttled: &mut Throttled,
    mut request: F,
    refused: impl Fn(&T) -> Option<Duration>,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    loop {
        let answer = request().await;
        let Some(retry_after) = refused(&answer) else {
            return answer;
        };
        let Some(wait) = throttled.wait_after(retry_after) else {
            warn!(
                operation_id = call.key.operation_id,
                throttled_ms = throttled.throttled_ms(),
                "still rate limited past the lease's trust; releasing the claim"
            );
            return answer;
        };
        info!(
            operation_id = call.key.operation_id,
            retry_after_ms = wait.as_millis() as u64,
            "rate limited; the same request goes again after the wait"
        );
        tokio::time::sleep(wait).await;
    }
}

/// Sends the call's request behind its send mark until the provider admits it
/// ([`until_admitted`]); only a 429 the provider's answers read as `NotExecuted` is sent
/// again, and a request that provably never left as [`send`] allows.
pub(crate) async fn send_until_admitted(
    deps: &ExecuteDeps,
    batches: &Batches,
    call: &Call<'_>,
    fence: i64,
    throttled: &mut Throttled,
) -> CallResult {
    until_admitted(
        call,
        throttled,
        || {
            send(deps.settings.not_sent_retries, || {
                call.provider.send_gated(
                    &call.op,
                    &call.request,
                    send_mark(deps, batches, call, fence),
                )
            })
        },
        |sent| {
            throttle::throttled(sent).filter(|_| {
                matches!(
                    call.provider.classify(&call.op, sent),
                    Outcome::NotExecuted { .. }
                )
            })
        },
    )
    .await
}

/// Sends a request; sends it again (same key, same body) only when the previous send
/// provably never reached the provider, at most `not_sent_retries` times in all.
async fn send<F, Fut>(not_sent_retries: u32, send: F) -> CallResult
where
    F: Fn() -> Fut,
    Fut: Future<Output = CallResult>,
{
    let mut sends = 0;
    loop {
        sends += 1;
        let call = send().await;
        let provably_unsent = matches!(call, CallResult::NotSent { .. });
        if !provably_unsent || sends >= not_sent_retries {
            return call;
        }
        tokio::time::sleep(NOT_SENT_BACKOFF * sends).await;
    }
}

/// Commits the attempt's send mark (after the slot, right before the send), on the
/// connection that holds the call's mandate if it has one. A mark that cannot be written
/// (the database refuses it under a revoked mandate) sends nothing.
fn send_mark<'a>(
    deps: &'a ExecuteDeps,
    batches: &'a Batches,
    call: &'a Call<'a>,
    fence: i64,
) -> SendGate<'a> {
    Box::pin(async move {
        let marked = match call.hold {
            Some(hold) => hold.mark_request_sent(call.key, fence).await,
            // With the marks of the other calls starting now: one commit for them all.
            None => batches.mark_sent(&deps.store, call.key, fence).await,
        };
        match marked {
            Ok(true) => {
                pause::point(pause::AFTER_SEND_MARK).await;
                true
            }
            Ok(false) => {
                warn!(
                    operation_id = call.key.operation_id,
                    fence, "the claim ended before its request was sent; not sending"
                );
                false
            }
            Err(e) => {
                warn!(operation_id = call.key.operation_id, fence, error = %e, "the send mark could not be written; not sending");
                false
            }
        }
    })
}
