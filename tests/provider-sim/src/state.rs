//! Everything the simulator remembers, behind one mutex, and the handle the routes share.
//!
//! The mutex is a `std::sync::Mutex`: every critical section is short and synchronous,
//! and none is ever held across an `.await` (delays happen between two sections).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::beneficiaries::Directory;
use crate::config::SimConfig;
use crate::crm::{CrmSettings, DealStore};
use crate::envelopes::{Envelope, EsignSettings};
use crate::faults::{FaultKind, FaultSet};
use crate::idempotency::IdempotencyStore;
use crate::ledger::{Ledger, ObjectStatus, Payment, Refund};
use crate::orders::OrderStore;
use crate::rate_limit::RateLimits;
use crate::request_log::{LoggedRequest, RequestLog, Seq};
use crate::route::Route;

#[derive(Debug)]
pub struct SimState {
    pub payments: Ledger<Payment>,
    pub refunds: Ledger<Refund>,
    pub envelopes: Ledger<Envelope>,
    pub deals: DealStore,
    pub orders: OrderStore,
    /// The payments API's payees, seeded at start and on reset.
    pub beneficiaries: Directory,
    pub keys: IdempotencyStore,
    /// The e-signature provider's keys, kept for its own (shorter) retention.
    pub esign_keys: IdempotencyStore,
    pub faults: FaultSet,
    pub requests: RequestLog,
    /// The `traceparent` of each provider API request that carried one.
    pub traces: crate::traces::TraceLog,
    pub rate_limits: RateLimits,
    pub webhooks: crate::webhooks::WebhookState,
    // How far the admin API has moved the simulator's clock ahead of the wall clock.
    clock_offset: TimeDelta,
}

impl SimState {
    fn new(
        key_retention: TimeDelta,
        esign_key_retention: TimeDelta,
        seed: u64,
        crm: CrmSettings,
        rate_limit_per_s: Option<u32>,
    ) -> Self {
        Self {
            payments: Ledger::default(),
            refunds: Ledger::default(),
            envelopes: Ledger::default(),
            deals: DealStore::new(crm),
            orders: OrderStore::default(),
            beneficiaries: Directory::seeded(Utc::now()),
            keys: IdempotencyStore::new(key_retention),
            esign_keys: IdempotencyStore::new(esign_key_retention),
            faults: FaultSet::new(seed),
            requests: RequestLog::default(),
            traces: Default::default(),
            rate_limits: RateLimits::new(rate_limit_per_s),
            webhooks: Default::default(),
            clock_offset: TimeDelta::zero(),
        }
    }

    /// The simulator's clock: key retention and search lag are measured on it.
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.clock_offset
    }

    pub fn advance_clock(&mut self, by: TimeDelta) {
        self.clock_offset += by;
    }

    pub fn clock_offset(&self) -> TimeDelta {
        self.clock_offset
    }

    /// Forgets every object, key, fault and logged request, and rewinds the clock.
    pub fn reset(&mut self) {
        self.payments = Ledger::default();
        self.refunds = Ledger::default();
        self.envelopes = Ledger::default();
        self.deals.forget_all();
        self.orders = OrderStore::default();
        self.beneficiaries = Directory::seeded(Utc::now());
        self.keys.forget_all();
        self.esign_keys.forget_all();
        self.faults.clear();
        self.requests = RequestLog::default();
        self.traces = Default::default();
        self.rate_limits.set(self.rate_limits.per_second);
        self.webhooks = Default::default();
        self.clock_offset = TimeDelta::zero();
    }
}

struct Shared {
    state: Mutex<SimState>,
    api_key: String,
    search_lag: TimeDelta,
    esign: EsignSettings,
    default_status: ObjectStatus,
    webhook_runtime: crate::webhooks::WebhookRuntime,
}

/// The handle every route holds: cheap to clone.
#[derive(Clone)]
pub struct App(Arc<Shared>);

impl App {
    pub fn new(config: &SimConfig) -> anyhow::Result<Self> {
        let retention = seconds(config.key_retention_s)?;
        let search_lag = TimeDelta::try_milliseconds(i64::try_from(config.search_lag_ms)?)
            .ok_or_else(|| anyhow::anyhow!("search_lag_ms is out of range"))?;
        // The seed only drives probabilistic faults; a fresh one per instance is enough.
        let seed = ulid::Ulid::new().random() as u64;
        Ok(Self(Arc::new(Shared {
            state: Mutex::new(SimState::new(
                retention,
                seconds(config.esign_key_retention_s)?,
                seed,
                CrmSettings::from_config(config)?,
                config.rate_limit_per_s,
            )),
            api_key: config.api_key.clone(),
            search_lag,
            esign: EsignSettings {
                search_lag: TimeDelta::try_milliseconds(i64::try_from(config.esign_search_lag_ms)?)
                    .ok_or_else(|| anyhow::anyhow!("esign_search_lag_ms is out of range"))?,
                send_after: config
                    .esign_auto_send
                    .then(|| Duration::from_millis(config.esign_send_delay_ms)),
            },
            default_status: config.default_status()?,
            webhook_runtime: crate::webhooks::WebhookRuntime::new()?,
        })))
    }

    pub fn lock(&self) -> MutexGuard<'_, SimState> {
        // A panic while holding the lock leaves at worst one request half-recorded; the
        // simulator is more useful serving on than failing every later request.
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn api_key(&self) -> &str {
        &self.0.api_key
    }

    pub fn search_lag(&self) -> TimeDelta {
        self.0.search_lag
    }

    pub fn esign(&self) -> EsignSettings {
        self.0.esign
    }

    pub fn default_status(&self) -> ObjectStatus {
        self.0.default_status
    }

    pub fn webhook_runtime(&self) -> &crate::webhooks::WebhookRuntime {
        &self.0.webhook_runtime
    }

    /// Logs a create request on arrival and picks the fault it suffers, atomically, so
    /// that the log order is the order in which faults were handed out.
    pub fn arrive(
        &self,
        route: Route,
        key: Option<String>,
        reference: Option<String>,
    ) -> (Seq, Option<FaultKind>) {
        let mut state = self.lock();
        let seq = state.requests.record(LoggedRequest {
            method: route.method(),
            path: route.path(),
            idempotency_key: key,
            reference,
            status: None,
            replayed: false,
            arrived_at: String::new(),
        });
        (seq, state.faults.take(route))
    }
}

pub fn seconds(seconds: u64) -> anyhow::Result<TimeDelta> {
    TimeDelta::try_seconds(i64::try_from(seconds)?)
        .ok_or_else(|| anyhow::anyhow!("{seconds} s is out of range"))
}
