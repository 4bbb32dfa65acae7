//! The connection pool and the handle every worker holds.

use std::marker::PhantomData;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

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
const SESSION_SETTINGS: &str =
    "-c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c jit=off";

/// How long one server of the URL gets to answer a new connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long opening a pooled connection may take: long enough for the client to try
/// every server of the URL in turn. With a primary and its standby named
/// (`…@db1,db2/fleet?target_session_attrs=read-write`), a primary that went silent
/// (a host that answers nothing, rather than refusing) holds each attempt for the whole
/// connect timeout before the client asks the standby; a bound of one connect timeout
/// would then give up every time without ever reaching the promoted standby.
fn create_timeout(servers: usize) -> Duration {
    CONNECT_TIMEOUT * servers.clamp(1, 16) as u32 + Duration::from_secs(1)
}

/// A clonable handle on the pool, held as component `R`: only the methods of the
/// capabilities `R` holds can be called (`component.rs`).
pub struct StoreAs<R> {
    pub(crate) pool: Pool,
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
            component: PhantomData,
        }
    }
}

impl<R: Component> std::fmt::Debug for StoreAs<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("role", &R::ROLE.map_or("owner", DbRole::name))
            .field("pool_size", &self.pool.status().max_size)
            .finish()
    }
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
    /// Builds a pool of at most `max_size` connections. Connections open lazily.
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
        config.connect_timeout(CONNECT_TIMEOUT);
        let servers = config.get_hosts().len();
        config.application_name(application_name);
        // Generic plans only: a compare-and-set then never sees its status parameters as
        // constants, so it is planned by primary key even while statistics lag (see
        // `rows.rs`). Set at connection start, so it costs no round trip; options already
        // in the URL are kept.
        let options = match config.get_options() {
            Some(given) => format!("{given} {SESSION_SETTINGS}"),
            None => SESSION_SETTINGS.to_owned(),
        };
        config.options(options);
        // `Fast` skips a round trip per checkout; a broken connection surfaces as a query
        // error, which every caller already treats as transient.
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(create_timeout(servers)))
            .build()
            .map_err(|e| StoreError::Config(e.to_string()))?;
        Ok(StoreAs {
            pool,
            component: PhantomData,
        })
    }

    /// The same pool under another component's type: the store's own, for a piece that
    /// serves several components with one capability (a provider's rate schedule).
    pub(crate) fn retype<S>(&self) -> StoreAs<S> {
        StoreAs {
            pool: self.pool.clone(),
            component: PhantomData,
        }
    }

    /// Closes the pool: connections are dropped and later checkouts fail.
    pub fn close(&self) {
        self.pool.close();
    }

    /// Readiness: a round trip within `timeout`.
    pub async fn ping(&self, timeout: Duration) -> bool {
        let check = async {
            let client = self.pool.get().await.ok()?;
            client.simple_query("SELECT 1").await.ok()
        };
        matches!(tokio::time::timeout(timeout, check).await, Ok(Some(_)))
    }

    /// A pooled connection. The store's own: everything outside it goes through the
    /// store's methods, so every write keeps its compare-and-set and its history row.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        Ok(self.pool.get().await?)
    }

    /// One of the pool's own connections, for a test that inspects what the store leaves
    /// on its sessions (their settings, the statements it prepared), which no other
    /// session can see. Never for queries of one's own: those go through the store.
    #[cfg(feature = "test-support")]
    pub async fn pooled_session(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.client().await
    }
}
