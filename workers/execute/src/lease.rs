//! Keeping the lease alive while the provider call is in flight. The future returned by
//! `hold` completes only when the lease is lost; the caller races it against the call and
//! abandons the call when it wins. Deadlines use the monotonic clock of this process,
//! counted conservatively from before the claim was sent, so a worker gives up before the
//! database could consider the lease expired.

use std::time::Duration;

use fleet_core::OpKey;
use fleet_store::ExecuteStore;
use tokio::time::{sleep, timeout_at, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseLost {
    /// The renewal found the row moved or its fence bumped.
    FencedOut,
    /// No renewal was confirmed within two thirds of the TTL.
    RenewalTimedOut,
}

impl LeaseLost {
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseLost::FencedOut => "lease_lost_fenced_out",
            LeaseLost::RenewalTimedOut => "lease_lost_renewal_timed_out",
        }
    }
}

const RENEW_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// How long after the claim a worker may still trust its lease without a confirmed renewal.
pub fn give_up_after(ttl_ms: i64) -> Duration {
    Duration::from_millis(ttl_ms.unsigned_abs()) * 2 / 3
}

pub async fn hold(
    store: ExecuteStore,
    op: OpKey,
    fence: i64,
    ttl_ms: i64,
    claim_sent_at: Instant,
) -> LeaseLost {
    let operation_id = op.operation_id.as_str();
    let ttl = Duration::from_millis(ttl_ms.unsigned_abs());
    let mut confirmed_at = claim_sent_at;
    loop {
        tokio::time::sleep_until(confirmed_at + ttl / 3).await;
        let give_up_at = confirmed_at + give_up_after(ttl_ms);
        loop {
            let sent_at = Instant::now();
            match timeout_at(give_up_at, store.renew_lease(op.op(), fence, ttl_ms)).await {
                Ok(Ok(true)) => {
                    confirmed_at = sent_at;
                    break;
                }
                Ok(Ok(false)) => return LeaseLost::FencedOut,
                Ok(Err(e)) => {
                    tracing::warn!(operation_id, fence, error = %e, "lease renewal failed; retrying");
                    if timeout_at(give_up_at, sleep(RENEW_RETRY_PAUSE))
                        .await
                        .is_err()
                    {
                        return LeaseLost::RenewalTimedOut;
                    }
                }
                Err(_) => return LeaseLost::RenewalTimedOut,
            }
        }
    }
}
