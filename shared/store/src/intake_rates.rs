//! The intake's payee lookups in a provider's shared schedule
//! (`migrations/0058_intake_rate_slots.sql`, docs/design.md#provider-rates). They take
//! slots of the same budget as execute's and reconcile's calls, but only while no more
//! than [`INTAKE_HORIZON`] of slots is queued ahead: calls for operations people already
//! approved go first, and a lookup waits until their queue is short again.

use std::time::Duration;

use fleet_core::throttle::BACKOFF;
use tokio::time::sleep;

use crate::component::PaceIntake;
use crate::rate_slots::{held, millis, Slot};
use crate::{StoreAs, StoreError};

const RESERVE_INTAKE: &str =
    "SELECT waits_ms, paused_ms, deferred_ms FROM fleet_reserve_intake_slots($1, $2, $3, $4, $5)";

/// The most of slots handed out ahead of now under which an intake lookup still gets
/// one: about the in-flight requests of a few replicas at the rates providers allow, so
/// an idle schedule serves lookups at once, and a queue of approved calls goes first.
pub const INTAKE_HORIZON: Duration = Duration::from_millis(250);
/// The longest an intake reservation sleeps before asking again (the queue ahead may
/// shrink faster than it said, when a replica stops).
const LONGEST_DEFERRAL: Duration = Duration::from_secs(1);

/// What an intake reservation answered: the slots (none when deferred), the pause left,
/// and how long until the queue ahead is short enough to ask again.
#[derive(Debug, Clone, PartialEq)]
pub struct IntakeReserved {
    pub waits: Vec<Duration>,
    pub paused: Duration,
    pub deferred: Duration,
}

impl<R: PaceIntake> StoreAs<R> {
    /// Reserves `slots` lookups to `provider` at `rate_per_s`, unless more than
    /// `horizon` of slots is queued ahead.
    pub async fn reserve_intake_slots(
        &self,
        provider: &str,
        rate_per_s: f64,
        slots: usize,
        horizon: Duration,
    ) -> Result<IntakeReserved, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(RESERVE_INTAKE).await?;
        let slots = i32::try_from(slots).unwrap_or(i32::MAX);
        let horizon_ms = horizon.as_secs_f64() * 1000.0;
        let row = client
            .query_one(
                &stmt,
                &[
                    &provider,
                    &rate_per_s,
                    &slots,
                    &BACKOFF.recovery_per_s,
                    &horizon_ms,
                ],
            )
            .await?;
        let waits: Vec<f64> = row.get(0);
        Ok(IntakeReserved {
            waits: waits.into_iter().map(millis).collect(),
            paused: millis(row.get(1)),
            deferred: millis(row.get(2)),
        })
    }

    /// A lookup to `provider` answered 429 asking for `retry_after`: the schedule pauses
    /// for every component, as for any 429.
    pub async fn intake_throttled(
        &self,
        provider: &str,
        retry_after: Duration,
    ) -> Result<(), StoreError> {
        self.report_throttled(provider, retry_after).await
    }
}

/// `k` intake slots, asking again after each deferral (never holding the row meanwhile).
pub(crate) async fn reserve_for_intake<R: PaceIntake>(
    store: &StoreAs<R>,
    provider: &str,
    rate_per_s: f64,
    k: usize,
) -> Vec<Slot> {
    loop {
        match store
            .reserve_intake_slots(provider, rate_per_s, k, INTAKE_HORIZON)
            .await
        {
            Ok(reserved) if reserved.waits.is_empty() => {
                sleep(
                    reserved
                        .deferred
                        .clamp(Duration::from_millis(5), LONGEST_DEFERRAL),
                )
                .await;
            }
            Ok(reserved) => return held(reserved.waits, reserved.paused),
            Err(e) => {
                let e = e.to_string();
                return (0..k).map(|_| Err(e.clone())).collect();
            }
        }
    }
}
