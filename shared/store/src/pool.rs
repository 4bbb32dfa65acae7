//! The connection pool and the handle every worker holds.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deadpool_postgres::{Hook, HookError, PoolError, TimeoutType};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};

use crate::connector::{heard_silence, FailoverConnect, Silence};

use crate::component::{self, Component, Owner};
use crate::{DbRole, StoreError};

/// The session settings every pooled connection starts with.
///
/// Generic plans: see `rows.rs` (why every compare-and-set is then planned by primary key).
///
/// No sequential scan where an index can answer: every statement of the store is written
/// to be answered by an index (the primary key, or a work list's partial index), and a
/// connection keeps the generic plan it made the first time. Made while a table is nearly
/// empty and has no statistics (a fresh deployment's first minutes), that plan is a
/// sequential scan, kept while the table grows: the execute worker's batch claim then read
/// the whole table for every batch. `enable_seqscan = off` only makes the planner prefer
/// any index path; a table no index can answer for is still scanned.
///
/// No JIT compilation: every statement of the store touches a handful of rows by index, so
/// compiling its expressions to machine code never pays for itself, and the planner's cost
/// estimates, which decide when to compile (`jit_above_cost`), are inflated by the two
/// settings above (a path `enable_seqscan = off` disfavours carries a huge cost), so with
/// the server's default `jit = on` a statement could be compiled on every execution.
/// Set here, for the fleet's own sessions, so a server configured either way gives the
/// same figures.
///
/// No parallel workers, for the same reason: a statement that reads a few rows by index
/// never gains from them, but a table with a long history and no statistics (the fleet
/// analyses nothing, and a server may run no autovacuum) makes the planner guess that a
/// partial index matches a large share of it, and a parallel plan is chosen. Each
/// execution then starts and stops server processes: with a million operations behind
/// it, the reconcile gauges' count of escalated operations started two workers on every
/// tick to count none.
const SESSION_SETTINGS: &str = "-c plan_cache_mode=force_generic_plan -c enable_seqscan=off \
     -c jit=off -c max_parallel_workers_per_gather=0";

/// How long opening a pooled connection may take: long enough for the connector to try
/// every server of the URL in turn, each for its whole connect timeout. With a primary
/// and its standby named (`…@db1,db2/fleet?target_session_attrs=read-write`), a primary
/// that went silent holds its attempt for the whole timeout before the standby is asked;
/// a bound of one connect timeout would give up every time without reaching it.
fn create_timeout(servers: usize, connect_timeout: Duration) -> Duration {
    connect_timeout * servers.clamp(1, 16) as u32 + Duration::from_secs(1)
}

/// A pooled connection idle longer than this is checked with a round trip before it is
/// handed out (a busy pool's connections are reused within milliseconds and pay nothing).
const CHECK_IDLE_AFTER: Duration = Duration::from_secs(2);

/// How long that check may take: a server that does not answer an empty query this fast
/// is in trouble, and the connection is dropped for a new one.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// Connections a pool may open without anyone having waited for one.
const OPEN_UNASKED: usize = 2;

/// While checkouts wait, the pool may open one more connection this often, up to its
/// size. A new connection pays for its first statements in the server's CPU (catalog
/// entries loaded, every statement planned, every trigger function compiled: 30–400 ms on
/// two cores with a long history). Opening one for every waiting checkout, prepare opened
/// eight in the first second of a load of 60 intents a second, and five more when one
/// commit stalled: each slowed the others, while a connection already warm would have
/// come back within milliseconds.
pub const POOL_GROW_EVERY: Duration = Duration::from_millis(25);

/// How a pool grows: its configured size, and when it last grew (shared by every clone).
struct Growth {
    size: usize,
    last: Mutex<Option<Instant>>,
}

impl Growth {
    fn new(size: usize) -> Growth {
        Growth {
            size,
            last: Mutex::new(None),
        }
    }

    /// One more connection may be opened, unless one was allowed less than
    /// [`POOL_GROW_EVERY`] ago or the pool is at its size.
    fn grow(&self, pool: &Pool) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < POOL_GROW_EVERY) {
            return;
        }
        let now = pool.status().max_size;
        if now < self.size {
            pool.resize(now + 1);
            *last = Some(Instant::now());
        }
    }
}

/// A clonable handle on the pool, held as component `R`: only the methods of the
/// capabilities `R` holds can be called (`component.rs`).
pub struct StoreAs<R> {
    pub(crate) pool: Pool,
    growth: Arc<Growth>,
    component: PhantomData<fn() -> R>,
}

/// The store as its owner holds it: every capability.
pub type Store = StoreAs<Owner>;
/// The store as fleet-api holds it.
pub type ApiStore = StoreAs<component::Api>;
/// The store as fleet-prepare holds it.
pub type PrepareStore = StoreAs<component::Prepare>;
/// The store as fleet-execute holds it.
pub type ExecuteStore = StoreAs<component::Execute>;
/// The store as fleet-reconcile holds it.
pub type ReconcileStore = StoreAs<component::Reconcile>;
/// The store as fleet-webhook-ingest holds it.
pub type IngestStore = StoreAs<component::WebhookIngest>;
/// The store as fleet-relay holds it.
pub type RelayStore = StoreAs<component::Relay>;

impl<R> Clone for StoreAs<R> {
    fn clone(&self) -> Self {
        StoreAs {
            pool: self.pool.clone(),
            growth: self.growth.clone(),
            component: PhantomData,
        }
    }
}

impl<R: Component> std::fmt::Debug for StoreAs<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("role", &R::ROLE.map_or("owner", DbRole::name))
            .field("pool_size", &self.growth.size)
            .finish()
    }
}

/// Before a pooled connection is handed out again: one opened before some connection of
/// the pool found its server silent is dropped unasked (its server is most likely the
/// same, and asking each in turn would cost a check timeout apiece), and one idle for a
/// while must answer an empty query within [`CHECK_TIMEOUT`].
fn idle_check(silence: Silence) -> Hook {
    Hook::async_fn(move |client, metrics| {
        let silence = silence.clone();
        Box::pin(async move {
            let silent_since = *silence.lock().unwrap_or_else(|e| e.into_inner());
            if silent_since.is_some_and(|at| metrics.created < at) {
                return Err(HookError::message("opened before its server went silent"));
            }
            if metrics.last_used() < CHECK_IDLE_AFTER {
                return Ok(());
            }
            match tokio::time::timeout(CHECK_TIMEOUT, client.simple_query("")).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(_)) => Err(HookError::message("failed its check")),
                Err(_) => {
                    heard_silence(&silence);
                    Err(HookError::message("no answer to its check"))
                }
            }
        })
    })
}

impl Store {
    /// The same pool held as component `R`: the owner may do everything any component
    /// may, so narrowing is always sound (a test starting one component in process over
    /// the owner's connection, say).
    pub fn narrow<R: Component>(&self) -> StoreAs<R> {
        self.retype()
    }
}

impl<R: Component> StoreAs<R> {
    /// Builds a pool of at most `max_size` connections. Connections open lazily, and
    /// beyond the first two only while checkouts wait ([`POOL_GROW_EVERY`]).
    pub fn connect(database_url: &str, max_size: usize) -> Result<Self, StoreError> {
        Self::connect_as(database_url, max_size, "fleet")
    }

    /// [`Store::connect`] under another `application_name` (what `pg_stat_activity` shows),
    /// for a client whose connections must be told apart from the fleet's (the bench's
    /// inserts and approvals, left out of the fleet's Postgres CPU).
    pub fn connect_as(
        database_url: &str,
        max_size: usize,
        application_name: &str,
    ) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = database_url
            .parse()
            .map_err(|e: tokio_postgres::Error| StoreError::Config(e.to_string()))?;
        config.application_name(application_name);
        // The fleet's bounds on a silent server, where the URL sets none (session_defaults.rs),
        // and the session settings above, after the URL's options (which are kept).
        let tuned = crate::session_defaults::tune(database_url, config, SESSION_SETTINGS);
        let config = tuned.config;
        let servers = config.get_hosts().len();
        let connect_timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(crate::session_defaults::CONNECT_TIMEOUT);
        let silence = Silence::default();
        let connect = FailoverConnect {
            reply_timeout: tuned.reply_timeout,
            preferred: Default::default(),
            silent_since: silence.clone(),
        };
        let pool = pool_builder(
            config,
            connect,
            max_size.min(OPEN_UNASKED),
            create_timeout(servers, connect_timeout),
        )
        .pre_recycle(idle_check(silence))
        .build()
        .map_err(|e| StoreError::Config(e.to_string()))?;
        Ok(StoreAs {
            pool,
            growth: Arc::new(Growth::new(max_size)),
            component: PhantomData,
        })
    }

    /// The same pool under another component's type: the store's own, for a piece that
    /// serves several components with one capability (a provider's rate schedule).
    pub(crate) fn retype<S>(&self) -> StoreAs<S> {
        StoreAs {
            pool: self.pool.clone(),
            growth: self.growth.clone(),
            component: PhantomData,
        }
    }

    /// The most connections the pool opens.
    pub(crate) fn size(&self) -> usize {
        self.growth.size
    }

    /// Closes the pool: connections are dropped and later checkouts fail.
    pub fn close(&self) {
        self.pool.close();
    }

    /// Readiness: a round trip within `timeout`.
    pub async fn ping(&self, timeout: Duration) -> bool {
        self.check(timeout).await.is_ok()
    }

    /// As [`ping`](Self::ping), with why not: the server's refusal in words (with what to
    /// run when the deployment is not set up), or the timeout. `/readyz` says it, so an
    /// operator does not have to find the cause in the logs.
    pub async fn check(&self, timeout: Duration) -> Result<(), Unready> {
        let check = async {
            let client = self.client().await?;
            client.simple_query("SELECT 1").await?;
            Ok::<(), StoreError>(())
        };
        match tokio::time::timeout(timeout, check).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Unready {
                not_set_up: e.is_not_set_up(),
                cause: e.to_string(),
            }),
            Err(_) => Err(Unready {
                not_set_up: false,
                cause: format!("no answer within {} ms", timeout.as_millis()),
            }),
        }
    }

    /// A pooled connection. The store's own: everything outside it goes through the
    /// store's methods, so every write keeps its compare-and-set and its history row.
    ///
    /// A pool that may still grow waits [`POOL_GROW_EVERY`] at a time for a connection to come
    /// back, and after each such wait allows one more to be opened: a burst is served by
    /// the connections already warm, and the pool reaches its size only under a load
    /// that keeps them all busy. The whole wait is bounded by the pool's wait timeout
    /// (10 s).
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        let timeouts = self.pool.timeouts();
        let deadline = Instant::now() + timeouts.wait.unwrap_or(Duration::from_secs(10));
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let grown = self.pool.status().max_size >= self.growth.size;
            // Once grown to its size, the pool is waited on for what is left of the
            // deadline, not for a whole wait timeout again.
            let wait = if grown {
                left
            } else {
                POOL_GROW_EVERY.min(left)
            };
            let mut step = timeouts;
            step.wait = Some(wait.max(Duration::from_millis(1)));
            match self.pool.timeout_get(&step).await {
                Ok(client) => return Ok(client),
                Err(PoolError::Timeout(TimeoutType::Wait)) if !grown && !left.is_zero() => {
                    self.growth.grow(&self.pool)
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// One of the pool's own connections, for a test that inspects what the store leaves
    /// on its sessions (their settings, the statements it prepared), which no other
    /// session can see. Never for queries of one's own: those go through the store.
    #[cfg(feature = "test-support")]
    pub async fn pooled_session(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.client().await
    }
}

/// Why the database is not ready, as [`Store::check`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unready {
    /// In words, never with a row's values.
    pub cause: String,
    /// The deployment is not set up (no such database, role or table): waiting does not
    /// mend it, `fleetctl migrate` does.
    pub not_set_up: bool,
}

impl std::fmt::Display for Unready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.cause)
    }
}

/// A pool's builder as the fleet's pools and the tools' own are built: connections by
/// `connect`, at most `max_size` of them, opening one waits `create_timeout`, and a
/// checkout waits at most 10 s. `Fast` recycling skips a round trip per checkout of a
/// busy connection; a broken one surfaces as a query error, which every caller already
/// treats as transient (the store's pool adds a hook that checks the idle ones).
pub fn pool_builder(
    config: tokio_postgres::Config,
    connect: impl deadpool_postgres::Connect + 'static,
    max_size: usize,
    create_timeout: Duration,
) -> deadpool_postgres::PoolBuilder {
    let manager = Manager::from_connect(
        config,
        connect,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(max_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(create_timeout))
}
