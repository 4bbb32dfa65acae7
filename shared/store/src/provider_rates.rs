//! The request schedule of each rate-limited provider, shared in Postgres by every replica
//! of execute and reconcile (`migrations/0052_provider_rates.sql`,
//! docs/design.md#provider-rates). A process asks for slots in batches (the requests that
//! overlap in time share one statement) and sleeps until each slot's time; a 429 pauses
//! the schedule for every replica and lowers its factor, by the rules of
//! `fleet_core::throttle`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fleet_core::throttle::BACKOFF;
use fleet_runtime::{Batcher, PaceFuture, Pacer};
use tokio::time::{sleep, sleep_until, Instant};
use tracing::warn;

use crate::component::{Component, PaceIntake, RateProviders};
use crate::intake_rates::reserve_for_intake;
use crate::rate_slots::{held, millis, Slot};
use crate::StoreAs;
use crate::StoreError;
use futures_util::future::BoxFuture;

const RESERVE: &str =
    "SELECT waits_ms, paused_ms FROM fleet_reserve_provider_slots($1, $2, $3, $4)";
const THROTTLED: &str = "SELECT fleet_provider_throttled($1, $2, $3, $4, $5)";

/// Most slots one reservation takes (the SQL function accepts up to 1000).
const MAX_BATCH: usize = 256;
/// Reservations under way at once: one more goes out while the first is in Postgres.
const IN_FLIGHT: usize = 2;
/// A slot that a pause, learned after it was handed out, made void is taken again; past
/// this many times (a provider pausing again and again) the request goes at its last slot.
const MAX_RETAKES: usize = 8;

/// What a reservation of `k` slots answered: when each may be sent, counted from the
/// moment the database answered, and how much of a shared pause is left.
#[derive(Debug, Clone, PartialEq)]
pub struct Reserved {
    pub waits: Vec<Duration>,
    pub paused: Duration,
}

impl<R: RateProviders> StoreAs<R> {
    /// Reserves `slots` requests to `provider` at `rate_per_s` in the shared schedule.
    pub async fn reserve_provider_slots(
        &self,
        provider: &str,
        rate_per_s: f64,
        slots: usize,
    ) -> Result<Reserved, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(RESERVE).await?;
        let slots = i32::try_from(slots).unwrap_or(i32::MAX);
        let row = client
            .query_one(
                &stmt,
                &[&provider, &rate_per_s, &slots, &BACKOFF.recovery_per_s],
            )
            .await?;
        let waits: Vec<f64> = row.get(0);
        Ok(Reserved {
            waits: waits.into_iter().map(millis).collect(),
            paused: millis(row.get(1)),
        })
    }

    /// `provider` answered 429 asking for `retry_after`: the schedule pauses that long for
    /// every replica, and its factor is lowered (once per pause).
    pub async fn provider_throttled(
        &self,
        provider: &str,
        retry_after: Duration,
    ) -> Result<(), StoreError> {
        self.report_throttled(provider, retry_after).await
    }
}

impl<R: Component> StoreAs<R> {
    /// Tells the shared schedule that `provider` answered 429 asking for `retry_after`,
    /// whichever component saw it (each calls it through its own capability).
    pub(crate) async fn report_throttled(
        &self,
        provider: &str,
        retry_after: Duration,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(THROTTLED).await?;
        let retry_after_ms = retry_after.as_secs_f64() * 1000.0;
        client
            .execute(
                &stmt,
                &[
                    &provider,
                    &retry_after_ms,
                    &BACKOFF.cut,
                    &BACKOFF.floor,
                    &BACKOFF.recovery_per_s,
                ],
            )
            .await?;
        Ok(())
    }
}

/// Reports a 429 to the shared schedule (the component's own grant).
type Report = Arc<dyn Fn(Duration) -> BoxFuture<'static, Result<(), StoreError>> + Send + Sync>;

/// One provider's pace for this process, taken from the shared schedule: as execute and
/// reconcile take it ([`ProviderSchedule::pacers`]), or as the intake's payee lookups do,
/// after them ([`ProviderSchedule::intake_pacers`]).
pub struct ProviderSchedule {
    provider: &'static str,
    rate_per_s: f64,
    slots: Batcher<(), Slot>,
    report: Report,
    /// The latest end of a pause this process knows of (its own 429s, and what each
    /// reservation said), so that a slot handed out before another replica's 429 is not
    /// spent inside the pause.
    paused_until: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for ProviderSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSchedule")
            .field("provider", &self.provider)
            .field("rate_per_s", &self.rate_per_s)
            .finish()
    }
}

impl ProviderSchedule {
    /// A schedule that takes its slots with `reserve` (`provider` at `rate_per_s`, a
    /// batch of `k`) and reports a 429 to the shared schedule; spawns its batching task
    /// (call it inside a Tokio runtime).
    fn spawned<R, Take, Taken>(
        store: &StoreAs<R>,
        provider: &'static str,
        rate_per_s: f64,
        reserve: Take,
    ) -> Arc<Self>
    where
        R: Component,
        Take: Fn(StoreAs<R>, &'static str, f64, usize) -> Taken + Send + 'static,
        Taken: std::future::Future<Output = Vec<Slot>> + Send + 'static,
    {
        let batch_store = store.clone();
        let slots = Batcher::spawn(MAX_BATCH, IN_FLIGHT, move |asks: Vec<()>| {
            reserve(batch_store.clone(), provider, rate_per_s, asks.len())
        });
        let report_store = store.clone();
        let report: Report = Arc::new(move |retry_after| {
            let store = report_store.clone();
            Box::pin(async move { store.report_throttled(provider, retry_after).await })
        });
        Self::with(provider, rate_per_s, slots, report)
    }

    fn with(
        provider: &'static str,
        rate_per_s: f64,
        slots: Batcher<(), Slot>,
        report: Report,
    ) -> Arc<Self> {
        Arc::new(ProviderSchedule {
            provider,
            rate_per_s,
            slots,
            report,
            paused_until: Mutex::new(None),
        })
    }

    /// The pacer of each provider `rates` names (at its rate), for
    /// `ProviderConfigs::connect_paced`, as execute and reconcile take their slots; a
    /// provider it leaves out is not paced.
    pub fn pacers<R: RateProviders>(
        store: &StoreAs<R>,
        rates: &[(&'static str, f64)],
    ) -> impl Fn(&'static str) -> Option<Arc<dyn Pacer>> {
        Self::taking(store, rates, reserve::<R>)
    }

    /// The same, for the intake's payee lookups, which wait while approved operations'
    /// calls are queued (`crate::intake_rates`).
    pub fn intake_pacers<R: PaceIntake>(
        store: &StoreAs<R>,
        rates: &[(&'static str, f64)],
    ) -> impl Fn(&'static str) -> Option<Arc<dyn Pacer>> {
        Self::taking(store, rates, |s, p, r, k| async move {
            reserve_for_intake(&s, p, r, k).await
        })
    }

    /// The pacers of `rates`, each taking its slots with `reserve` ([`Self::spawned`]).
    fn taking<R, Take, Taken>(
        store: &StoreAs<R>,
        rates: &[(&'static str, f64)],
        reserve: Take,
    ) -> impl Fn(&'static str) -> Option<Arc<dyn Pacer>>
    where
        R: Component,
        Take: Fn(StoreAs<R>, &'static str, f64, usize) -> Taken + Copy + Send + 'static,
        Taken: std::future::Future<Output = Vec<Slot>> + Send + 'static,
    {
        let schedule =
            |&(provider, rate)| (provider, Self::spawned(store, provider, rate, reserve));
        pacer_of(rates.iter().map(schedule).collect())
    }

    fn learn_pause(&self, until: Instant) {
        let mut known = self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *known = Some(known.map_or(until, |k| k.max(until)));
    }

    fn paused_at(&self, at: Instant) -> bool {
        self.paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|until| at < until)
    }

    async fn take_slot(&self) {
        for _ in 0..MAX_RETAKES {
            match self.slots.submit(()).await {
                Some(Ok((at, paused_until))) => {
                    self.learn_pause(paused_until);
                    sleep_until(at).await;
                    if !self.paused_at(Instant::now()) {
                        return;
                    }
                }
                failed => {
                    // Postgres is out of reach: keep this process's own pace at least,
                    // rather than stop calling (the claim or lookup that follows needs
                    // Postgres too, and says so).
                    let error = match failed {
                        Some(Err(e)) => e,
                        _ => "the reservation's batch ended without a result".to_owned(),
                    };
                    warn!(
                        provider = self.provider,
                        error, "no slot from the shared schedule; pacing this process alone"
                    );
                    sleep(Duration::from_secs_f64(1.0 / self.rate_per_s)).await;
                    return;
                }
            }
        }
    }
}

fn pacer_of(
    schedules: Vec<(&'static str, Arc<ProviderSchedule>)>,
) -> impl Fn(&'static str) -> Option<Arc<dyn Pacer>> {
    move |name| {
        schedules
            .iter()
            .find(|(provider, _)| *provider == name)
            .map(|(_, schedule)| {
                let pacer: Arc<dyn Pacer> = schedule.clone();
                pacer
            })
    }
}

async fn reserve<R: RateProviders>(
    store: StoreAs<R>,
    provider: &'static str,
    rate_per_s: f64,
    k: usize,
) -> Vec<Slot> {
    match store.reserve_provider_slots(provider, rate_per_s, k).await {
        Ok(reserved) => held(reserved.waits, reserved.paused),
        Err(e) => {
            let e = e.to_string();
            (0..k).map(|_| Err(e.clone())).collect()
        }
    }
}

impl Pacer for ProviderSchedule {
    fn slot(&self) -> PaceFuture<'_> {
        Box::pin(self.take_slot())
    }

    fn throttled(&self, retry_after: Duration) -> PaceFuture<'_> {
        Box::pin(async move {
            self.learn_pause(Instant::now() + retry_after);
            if let Err(e) = (self.report)(retry_after).await {
                warn!(provider = self.provider, error = %e, "could not pause the shared schedule; only this process waits");
            }
        })
    }
}
