//! The test fleet: a fresh database built by the real migrations, a private broker
//! namespace, the provider simulator over real HTTP, and the workers' own `run`
//! functions started in-process on demand. Everything is torn down when it is dropped.

mod alone;
mod api;
mod api_replicas;
mod axe;
mod broker_users;
mod browser;
mod console;
mod demo_run;
mod events;
mod forged_approvals;
mod intents;
mod localstripe;
mod mandate_setup;
mod mcp;
mod passkeys;
mod pg_pair;
mod ports;
mod processes;
mod promise_check;
mod rabbit_cluster;
mod read_plan;
mod role_sessions;
mod seeding;
mod signing;
mod silent_proxy;
mod stripe_proxy;
mod wait;
mod webhooks;

pub mod driven_answers;
pub mod refused_start;
pub mod sim_faults;
pub mod slow_client;
pub mod status_guard;
pub mod stripe_events;
pub mod stripe_fleet;
pub mod succeeded_count;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fleet_boot::ProviderWorkerDeps;
use fleet_broker::{BrokerConfig, BrokerHealth, Publisher, Queue};
use fleet_core::reconcile::ProviderContract;
use fleet_core::{Decider, Doorbell, OpRef, PolicySet, SignIn, Status};
use fleet_execute::{ExecuteDeps, ExecuteSettings};
use fleet_prepare::{IntakeRules, PayeeDirectory, PrepareDeps, ProviderCapabilities};
use fleet_provider_sim::{RunningSim, SimConfig};
use fleet_providers::{
    CrmClient, Endpoint, PaymentsClient, ProviderConfig, ProviderConfigs, Providers,
};
use fleet_reconcile::{ReconcileDeps, ReconcileSettings};
use fleet_runtime::Secret;
use fleet_store::{ApprovalOutcome, Store};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use alone::{alone, alone_blocking, Alone};
pub use api::{
    admin_url_of, bare_fleetctl, principal_add, ready, scrape, scrape_gauge, ApiProcess,
    DEAD_AMQP_URL, DEAD_DATABASE_URL,
};
pub use api_replicas::{approvals_from_rows, ApiReplicas, Driven, RetryingClient};
pub use broker_users::BrokerUsers;
pub use browser::Browser;
pub use console::{
    console_get, console_post, cookie_value, form_token, no_redirects, session_of, set_cookie,
    sign_in_over_http, SignedIn, CLAIMED_ROLE, CLAIMED_TENANTS, TEST_USERS,
};
pub use demo_run::{printed_after, DemoRun};
pub use events::{fast_relay, operation_data, EventOrder, EventTap, TappedEvent};
pub use forged_approvals::mark_approved;
pub use intents::{
    charge_intent, contract_intent, deal_create_intent, deal_update_intent, intent, intent_bytes,
    order_change_intent, refund_intent, with_amount, with_payload_member, CONTRACT_SHA256,
    NON_LATIN_ID, SPOOFED_IDS,
};
pub use localstripe::{Localstripe, LOCALSTRIPE_KEY};
pub use mcp::{call as mcp_call, McpAgent, ToolAnswer};
pub use pg_pair::{Fencer, PgFault, PgPair};
pub use ports::fixed_port;
pub use processes::{bin_dir, WorkerProcess, TWO_OF_EACH_WORKER};
pub use promise_check::{blind_retries, check_promise, history_breaks, PromiseReport};
pub use rabbit_cluster::RabbitCluster;
pub use read_plan::{operations_scans, pages_of, read_plan};
pub use role_sessions::answer_of;
pub use seeding::seeded_with_triggers_off;
pub use signing::{signed_approval, statement_of, Signer};
pub use silent_proxy::SilentProxy;
pub use stripe_proxy::{Fault, Seen, StripeProxy};
pub use wait::{eventually, eventually_within, DEADLINE};

/// The tenant of the intents the tests build ([`intent`]), which holds most of the
/// operations a test names by id.
pub const TENANT: &str = "org_482";

/// Operation `op` of the tests' tenant ([`TENANT`]): ids are unique per tenant, so the store
/// names an operation by both.
pub fn at(op: &str) -> OpRef<'_> {
    OpRef::new(TENANT, op)
}

/// The one stored operation with the id `op`, of whichever tenant; a test that stores one id
/// in two tenants names the tenant instead.
/// The JSON answer to `request`, which must succeed.
async fn success_json(request: reqwest::RequestBuilder) -> Value {
    let response = request.send().await.unwrap();
    response.error_for_status().unwrap().json().await.unwrap()
}

async fn row_of(store: &Store, op: &str) -> Option<fleet_store::OperationRow> {
    let tenants = store.tenants_of(op).await.unwrap();
    match tenants.as_slice() {
        [] => None,
        [tenant] => store.get(OpRef::new(tenant, op)).await.unwrap(),
        several => panic!("{op} is stored in {several:?}: name the tenant"),
    }
}

/// The reference (and key) a provider knows operation `op` of [`TENANT`] by, as intake
/// derives and stores it; anything that is not an operation id is a reference already.
pub fn reference(op: &str) -> String {
    fleet_core::OperationId::parse(op).map_or_else(
        |_| op.to_owned(),
        |id| id.idempotency_key(TENANT).as_str().to_owned(),
    )
}
pub use webhooks::{
    event_body, now_s, webhook_secrets, BrokerProxy, SignedDelivery, WebhookIngest, OTHER_SECRET,
    WEBHOOK_SECRET,
};

/// The servers a test fleet runs on: by default the machine's shared Postgres and broker
/// (`TEST_DATABASE_URL`, `AMQP_URL`); a failover test brings its own.
#[derive(Clone, Debug)]
pub struct Infra {
    /// A server URL without a database (`postgres://user@host:port`), or a list of servers
    /// with options (`postgres://user@h1:p1,h2:p2?target_session_attrs=read-write`, a
    /// [`PgPair`]): the fleet creates its database there ([`database_url_at`]), migrates
    /// it, connects the harness's own pool to it, and gives the workers the same servers.
    pub database_base_url: String,
    /// What the workers (and the harness's publisher) are given as `AMQP_URL`.
    pub amqp_url: String,
}

impl Infra {
    /// The machine's shared Postgres and broker.
    pub fn shared() -> Infra {
        Infra {
            database_base_url: std::env::var("TEST_DATABASE_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into()),
            amqp_url: std::env::var("AMQP_URL")
                .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into()),
        }
    }
}

/// The URL of database `name` on the servers of `base_url`, a URL without a database whose
/// options (after `?`), if any, are kept after the database's name.
pub fn database_url_at(base_url: &str, name: &str) -> String {
    match base_url.split_once('?') {
        Some((servers, options)) => format!("{servers}/{name}?{options}"),
        None => format!("{base_url}/{name}"),
    }
}

pub struct TestFleet {
    name: String,
    pub database_url: String,
    pub store: Store,
    pub broker: BrokerConfig,
    pub publisher: Publisher,
    pub sim: RunningSim,
    pub http: reqwest::Client,
    shutdown: CancellationToken,
    workers: Vec<JoinHandle<()>>,
    /// The worker processes started (`spawn_process`), ended before the namespace is.
    processes: processes::Started,
    /// Set once [`TestFleet::stop`] removed the database and the namespace; otherwise
    /// (a test that panicked) `Drop` removes them.
    removed: bool,
    /// This test's share of the process (or all of it): a test that must run alone waits
    /// until every fleet is gone (see [`alone`]). Dropped last, after the clean-up.
    _share: Arc<alone::Hold>,
}

impl TestFleet {
    /// A fresh database and namespace and a running simulator; no workers yet.
    pub async fn start() -> TestFleet {
        Self::start_with_sim(SimConfig::default()).await
    }

    /// [`TestFleet::start`] with prepare running in-process.
    pub async fn with_prepare() -> TestFleet {
        let mut fleet = TestFleet::start().await;
        fleet.spawn_prepare();
        fleet
    }

    pub async fn start_with_sim(sim: SimConfig) -> TestFleet {
        Self::start_on(Infra::shared(), sim).await
    }

    /// A fleet on these servers (a failover test's own cluster) instead of the shared ones.
    pub async fn start_on(infra: Infra, sim: SimConfig) -> TestFleet {
        let share = alone::share().await;
        // In-process workers log to the test's output, shown when a test fails.
        fleet_runtime::init_tracing_with_default(fleet_runtime::LogFormat::Text, "warn");
        let name = format!("fleet_t_{}", ulid::Ulid::new().to_string().to_lowercase());
        let database_url = database_url_at(&infra.database_base_url, &name);
        fleet_store::create_database_if_missing(&database_url)
            .await
            .expect("create the test database");
        fleet_store::migrate(&database_url)
            .await
            .expect("migrate the test database");
        let store = Store::connect(&database_url, 8).expect("pool");
        // The people the store-level tests approve as: the database records (and counts)
        // an approval only by a live approver of the operation's tenant.
        store
            .pooled_session()
            .await
            .expect("a connection")
            .batch_execute(&format!(
                "INSERT INTO principals (name, role) SELECT unnest(ARRAY['{names}']), 'approver';
                 INSERT INTO principal_tenants (principal, tenant_id) SELECT unnest(ARRAY['{names}']), '{TENANT}'",
                names = STORE_APPROVERS.join("','")
            ))
            .await
            .expect("the store-level approvers");
        let mut broker = BrokerConfig::new(infra.amqp_url.clone())
            .with_namespace(format!("t{}", ulid::Ulid::new().to_string().to_lowercase()));
        // The tests share one broker with every other test running at the same moment (and
        // each declares a dozen quorum queues): a handshake may wait its turn for longer
        // than a worker's default bound.
        broker.connect_timeout_ms = 30_000;
        let publisher = Publisher::connect(&broker).await.expect("broker");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the simulator");
        let sim = fleet_provider_sim::spawn(sim, listener)
            .await
            .expect("simulator");
        TestFleet {
            name,
            database_url,
            store,
            broker,
            publisher,
            sim,
            http: reqwest::Client::new(),
            shutdown: CancellationToken::new(),
            workers: Vec::new(),
            processes: Default::default(),
            removed: false,
            _share: share,
        }
    }

    /// The fleet's unique name (its database's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn payments_client(&self, timeout_ms: u64) -> PaymentsClient {
        PaymentsClient::new(Endpoint {
            base_url: self.sim.base_url.clone(),
            api_key: Secret::new("sk_test_sim".into()),
            timeout_ms,
        })
        .expect("payments client")
    }

    pub fn crm_client(&self, timeout_ms: u64) -> CrmClient {
        CrmClient::new(Endpoint {
            base_url: self.sim.base_url.clone(),
            api_key: Secret::new("sk_test_sim".into()),
            timeout_ms,
        })
        .expect("crm client")
    }

    /// Every provider at the simulator, which serves them all, as the harness documents
    /// them: a 300 ms search lag, no request that commits after it was answered (the
    /// simulator commits before it answers unless a test delays it), each provider's
    /// reference guarantees. A test changes what it needs, then connects them.
    pub fn provider_configs(&self) -> ProviderConfigs {
        ProviderConfigs::all_at(&self.sim.base_url, "sk_test_sim", 5_000, 300, 0)
    }

    pub fn spawn_prepare(&mut self) {
        self.spawn_prepare_with(self.provider_configs().capabilities());
    }

    /// Starts prepare judging by `providers` (their guarantees) and reading payees and
    /// payers at them (a payments provider spoken as Stripe, say), with the repository's
    /// quorum policies.
    pub fn spawn_prepare_at(&mut self, providers: &ProviderConfigs) {
        let rules = IntakeRules {
            providers: providers.capabilities(),
            policies: Arc::new(policies()),
            payees: PayeeDirectory::new(connect(providers)),
        };
        self.spawn_prepare_rules(rules);
    }

    /// Starts prepare reading the payments provider as Stripe (without search) at
    /// `base_url` with `api_key` (localstripe, a proxy in front of it, the Stripe
    /// simulator); every other provider stays at the simulator.
    pub fn spawn_prepare_at_stripe(&mut self, base_url: &str, api_key: &str) {
        let mut configs = self.provider_configs();
        let payments = configs.provider_mut("payments");
        payments.base_url = base_url.to_owned();
        payments.api_key = Secret::new(api_key.to_owned());
        payments.dialect = fleet_core::catalogue::Dialect::Stripe { search: false };
        self.spawn_prepare_at(&configs);
    }

    /// Starts prepare with these provider guarantees (the capability guard's input) and
    /// the repository's quorum policies.
    pub fn spawn_prepare_with(&mut self, providers: ProviderCapabilities) {
        self.spawn_prepare_judging(providers, policies());
    }

    /// Loads these policies into the deployment's database beside the repository's (as
    /// `fleetctl migrate` loads a `POLICY_DIR`): what an insert is checked against.
    pub async fn load_policies(&self, policies: &PolicySet) {
        self.store
            .load_policies(policies, "test")
            .await
            .expect("load the policies");
    }

    /// Puts `policy_version` in force for `action`, for `tenant` or (`None`) by default,
    /// as an administrator would (`fleetctl policy assign`).
    pub async fn assign_policy(&self, tenant: Option<&str>, action: &str, policy_version: &str) {
        let action = fleet_core::intent::Action::parse(action).expect("an action");
        let assigned = self
            .store
            .assign_policy(tenant, action, policy_version, "test-admin")
            .await
            .expect("assign the policy");
        assert!(
            matches!(assigned, fleet_store::PolicyAssigned::Assigned { .. }),
            "{assigned:?}"
        );
    }

    /// Starts prepare with these provider guarantees and these quorum policies, looking
    /// payees up at the simulator.
    pub fn spawn_prepare_judging(&mut self, providers: ProviderCapabilities, policies: PolicySet) {
        let rules = IntakeRules {
            providers,
            policies: Arc::new(policies),
            payees: PayeeDirectory::new(connect(&self.provider_configs())),
        };
        self.spawn_prepare_rules(rules);
    }

    /// Starts prepare in-process judging by `rules`.
    fn spawn_prepare_rules(&mut self, rules: IntakeRules) {
        let deps = PrepareDeps {
            store: self.store.narrow(),
            broker: self.broker.clone(),
            health: BrokerHealth::new(),
            rules,
            // Tests publish as the shared broker user (the door's identities are tested
            // with the real processes).
            anonymous: fleet_prepare::AnonymousIntents::Allow,
            lookup_deadline: fleet_core::directory_wait::DEFAULT_DEADLINE,
            concurrency: 4,
        };
        self.spawn_worker("prepare worker", |shutdown| {
            fleet_prepare::run(deps, shutdown)
        });
    }

    /// Runs a worker's `run` in-process until the fleet stops; a worker that ends in an
    /// error fails the test, named `what`.
    fn spawn_worker<F, E>(&mut self, what: &'static str, run: impl FnOnce(CancellationToken) -> F)
    where
        F: std::future::Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Debug,
    {
        let running = run(self.shutdown.clone());
        self.workers
            .push(tokio::spawn(async move { running.await.expect(what) }));
    }

    pub fn execute_deps(&self, settings: ExecuteSettings) -> ExecuteDeps {
        self.execute_deps_with(settings, &self.provider_configs())
    }

    pub fn execute_deps_with(
        &self,
        settings: ExecuteSettings,
        providers: &ProviderConfigs,
    ) -> ExecuteDeps {
        self.provider_worker_deps(providers, settings)
    }

    /// What a worker that calls providers (execute, reconcile) is built from in this
    /// fleet: its store as component `R`, the broker, the publisher, `providers`
    /// connected, its `settings`, and four operations at a time.
    fn provider_worker_deps<R: fleet_store::component::Component, S>(
        &self,
        providers: &ProviderConfigs,
        settings: S,
    ) -> ProviderWorkerDeps<R, S> {
        ProviderWorkerDeps {
            store: self.store.narrow(),
            broker: self.broker.clone(),
            health: BrokerHealth::new(),
            publisher: self.publisher.clone(),
            providers: connect(providers),
            settings,
            concurrency: 4,
        }
    }

    pub fn spawn_execute(&mut self) {
        self.spawn_execute_with(ExecuteSettings::default());
    }

    pub fn spawn_execute_with(&mut self, settings: ExecuteSettings) {
        self.spawn_execute_deps(self.execute_deps(settings));
    }

    pub fn spawn_execute_deps(&mut self, deps: ExecuteDeps) {
        self.spawn_worker("execute worker", |shutdown| {
            fleet_execute::run(deps, shutdown)
        });
    }

    /// Reconcile with every provider documenting `contract`'s search lag and request
    /// bound, and the payments provider its key retention (the others keep theirs).
    pub fn reconcile_deps(
        &self,
        contract: ProviderContract,
        settings: ReconcileSettings,
    ) -> ReconcileDeps {
        let mut providers = self.provider_configs();
        for name in fleet_core::catalogue::providers() {
            documents(providers.provider_mut(name.as_str()), contract);
        }
        let payments = providers.provider_mut("payments");
        payments.capabilities.idempotent_create =
            Some(Duration::from_millis(contract.key_retention_ms));
        self.reconcile_deps_with(&providers, settings)
    }

    pub fn reconcile_deps_with(
        &self,
        providers: &ProviderConfigs,
        settings: ReconcileSettings,
    ) -> ReconcileDeps {
        self.provider_worker_deps(providers, settings)
    }

    /// Starts reconcile in-process with the given provider contract, sweeping fast.
    pub fn spawn_reconcile(&mut self, contract: ProviderContract, settings: ReconcileSettings) {
        let deps = self.reconcile_deps(contract, settings);
        self.spawn_reconcile_deps(deps);
    }

    pub fn spawn_reconcile_deps(&mut self, deps: ReconcileDeps) {
        self.spawn_worker("reconcile worker", |shutdown| {
            fleet_reconcile::run(deps, shutdown)
        });
    }

    pub async fn submit(&self, intent: &Value) {
        self.submit_bytes(&serde_json::to_vec(intent).unwrap())
            .await;
    }

    pub async fn submit_bytes(&self, bytes: &[u8]) {
        self.publisher
            .publish(Queue::IntentsPrepare, bytes)
            .await
            .expect("publish intent");
    }

    /// The one stored operation with this id, of whichever tenant, if any (most tests name
    /// an operation by id; the few that put one id in two tenants read the store by
    /// (tenant, id) themselves).
    pub async fn stored(&self, op: &str) -> Option<fleet_store::OperationRow> {
        row_of(&self.store, op).await
    }

    /// The reference the provider knows `op` by: its stored key, or for an id not stored
    /// (yet) the key intake would store for [`TENANT`]; anything else is a reference already.
    pub async fn reference_of(&self, op: &str) -> String {
        match self.stored(op).await {
            Some(row) => row.idempotency_key.to_string(),
            None => reference(op),
        }
    }

    pub async fn ring_execute(&self, op: &str) {
        let tenant = self
            .stored(op)
            .await
            .map_or(TENANT.to_owned(), |r| r.tenant_id);
        self.publisher
            .publish(
                Queue::OperationsExecute,
                &Doorbell::new(&tenant, op).to_bytes(),
            )
            .await
            .expect("ring execute");
    }

    /// Approves as [`TEST_APPROVER`] through the store function behind fleet-api's
    /// approve (what it calls once the caller is authorized), then rings execute as the
    /// API does: `Ok(rung)`. Anything but an approval that completes the quorum is the
    /// store's answer as an error. (Tests of who may approve go through the API.)
    pub async fn approve(&self, op: &str, hash: &str) -> Result<bool, ApprovalOutcome> {
        let tenant = self
            .stored(op)
            .await
            .map_or(TENANT.to_owned(), |r| r.tenant_id);
        // The harness's approver acts for whichever tenant the test stored the operation in.
        self.store
            .pooled_session()
            .await
            .expect("a connection")
            .execute(
                "INSERT INTO principal_tenants (principal, tenant_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&TEST_APPROVER.name, &tenant],
            )
            .await
            .expect("the harness's approver granted the tenant");
        match self
            .store
            .approve(OpRef::new(&tenant, op), hash, &TEST_APPROVER, None)
            .await
            .expect("approve")
        {
            ApprovalOutcome::Approved => {}
            other => return Err(other),
        }
        let bell = Doorbell::new(&tenant, op).to_bytes();
        Ok(self
            .publisher
            .publish(Queue::OperationsExecute, &bell)
            .await
            .is_ok())
    }

    /// Approves as [`TEST_APPROVER`] through the store alone: no doorbell is rung, as when
    /// the API's publish was lost. The store's answer.
    pub async fn approve_without_ringing(&self, op: &str, hash: &str) -> ApprovalOutcome {
        self.store
            .approve(at(op), hash, &TEST_APPROVER, None)
            .await
            .expect("approve")
    }

    /// Submits `intent` to the queue and waits until prepare stored it: its operation id.
    pub async fn submitted(&self, intent: &Value) -> String {
        let op = op_of(intent);
        self.submit(intent).await;
        self.prepared(&op).await;
        op
    }

    /// Submits `intent` to the queue, waits until it is prepared and approves it, execute
    /// rung: its operation id.
    pub async fn submit_and_approve(&self, intent: &Value) -> String {
        let op = self.submitted(intent).await;
        let rung = self.approve(&op, &hash_of(intent)).await.expect("approved");
        assert!(rung, "execute rung for {op}");
        op
    }

    /// Submits `intent` to the queue and waits until prepare dead-letters it with
    /// `reason`, having stored nothing.
    pub async fn refused_at_intake(&self, intent: &Value, reason: &str) {
        self.submit(intent).await;
        let dead = self.expect_dead_letters(Queue::IntentsPrepare, 1).await;
        assert_eq!(dead[0].1.as_deref(), Some(reason));
        assert!(
            self.store
                .get(OpRef::new(
                    intent["tenant_id"].as_str().unwrap_or(TENANT),
                    &op_of(intent)
                ))
                .await
                .unwrap()
                .is_none(),
            "nothing written"
        );
    }

    /// Stores `intent` as intake stores it, needing `approvals_required` approvers and
    /// submitted by `submitter`, without a prepare worker: its operation id.
    pub async fn stored_with_quorum(
        &self,
        intent: &Value,
        approvals_required: i16,
        submitter: Option<&str>,
    ) -> String {
        let valid =
            fleet_core::parse_intent(&serde_json::to_vec(intent).unwrap()).expect("a valid intent");
        self.store
            .insert_prepared(&valid, approvals_required, submitter)
            .await
            .expect("stored");
        op_of(intent)
    }

    /// Waits until prepare has stored the operation.
    pub async fn prepared(&self, op: &str) -> fleet_store::OperationRow {
        let store = self.store.clone();
        eventually("the operation to be prepared", || {
            let store = store.clone();
            async move { row_of(&store, op).await }
        })
        .await
    }

    /// Waits until the operation's status is `status`.
    pub async fn reaches(&self, op: &str, status: Status) -> fleet_store::OperationRow {
        let store = self.store.clone();
        eventually(&format!("{op} to become {status}"), || {
            let store = store.clone();
            async move { row_of(&store, op).await.filter(|r| r.status == status) }
        })
        .await
    }

    /// [`TestFleet::reaches`] for the operation `op` of `tenant`, where more than one
    /// tenant holds the id.
    pub async fn reaches_in(
        &self,
        tenant: &str,
        op: &str,
        status: Status,
    ) -> fleet_store::OperationRow {
        let store = self.store.clone();
        eventually(&format!("{op} of {tenant} to become {status}"), || {
            let store = store.clone();
            async move {
                let row = store.get(OpRef::new(tenant, op)).await.unwrap();
                row.filter(|r| r.status == status)
            }
        })
        .await
    }

    /// Nothing was decided on the operation: it waits, not started, for its approval.
    pub async fn still_pending(&self, op: &str) {
        let row = self.row(op).await;
        assert_eq!(
            (row.status, row.approval_status),
            (Status::NotStarted, fleet_core::ApprovalStatus::Pending),
            "{op}"
        );
    }

    /// The operation's row, of whichever tenant holds the id ([`TestFleet::stored`]); it
    /// must exist.
    pub async fn row(&self, op: &str) -> fleet_store::OperationRow {
        self.stored(op)
            .await
            .unwrap_or_else(|| panic!("{op} is stored"))
    }

    /// Waits until execute has finished the operation's first attempt: that attempt.
    pub async fn first_attempt_finished(&self, op: &str) -> fleet_store::AttemptRow {
        eventually("execute to record its attempt", || async {
            let row = self.stored(op).await?;
            self.store
                .attempts(row.key())
                .await
                .unwrap()
                .into_iter()
                .next()
                .filter(|a| a.finished_at.is_some())
        })
        .await
    }

    /// Waits until the operation is escalated to an operator (`escalated_at` set).
    pub async fn escalated(&self, op: &str) -> fleet_store::OperationRow {
        let store = self.store.clone();
        eventually(&format!("{op} to be escalated"), || {
            let store = store.clone();
            async move {
                row_of(&store, op)
                    .await
                    .filter(|r| r.escalated_at.is_some())
            }
        })
        .await
    }

    /// [`TestFleet::escalated`], which must leave the operation at `status` for `reason`.
    pub async fn escalated_as(
        &self,
        op: &str,
        status: Status,
        reason: &str,
    ) -> fleet_store::OperationRow {
        let row = self.escalated(op).await;
        assert_eq!(
            (
                row.status,
                row.status_reason.map(fleet_core::Reason::as_str)
            ),
            (status, Some(reason)),
            "{op} escalated"
        );
        row
    }

    /// Waits until reconcile escalates the operation, sent once and with no effect, because
    /// a retry would fall past the end of the provider's key retention: never claimed
    /// again, never sent again.
    pub async fn escalated_past_key_retention(&self, op: &str) {
        let row = self
            .escalated_as(op, Status::Unknown, "key_retention_passed")
            .await;
        assert_eq!(row.fence, 1, "never claimed again");
        assert_eq!(self.sim_posts(op).await, 1);
        assert_eq!(self.sim_effects(op).await, 0);
    }

    /// Waits until the operation's history holds an event of `kind` (`lookup`,
    /// `audited`, …), and returns the first.
    pub async fn recorded(
        &self,
        op: &str,
        kind: fleet_core::history::HistoryKind,
    ) -> fleet_store::EventRow {
        let store = self.store.clone();
        eventually(&format!("a {kind} event of {op}"), || {
            let store = store.clone();
            async move {
                let row = row_of(&store, op).await?;
                store
                    .events(row.key())
                    .await
                    .unwrap()
                    .into_iter()
                    .find(|e| e.kind == kind)
            }
        })
        .await
    }

    /// Rings execute for an operation whose key may be forgotten, and waits until it is
    /// escalated with `key_retention_passed` having sent nothing.
    pub async fn escalated_without_sending(&self, op: &str) -> fleet_store::OperationRow {
        self.ring_execute(op).await;
        let row = self.escalated(op).await;
        assert_eq!(
            (
                row.status,
                row.status_reason.map(fleet_core::Reason::as_str)
            ),
            (Status::Unknown, Some("key_retention_passed"))
        );
        assert_eq!(
            self.sim_posts(op).await,
            0,
            "nothing sent on a forgotten key"
        );
        row
    }

    /// Makes the operation's key look first used `ago` (a Postgres interval, e.g.
    /// `'25 hours'`), by an attempt that provably never left: what a long backlog of
    /// releases and redrives leaves behind.
    pub async fn first_attempt_ago(&self, op: &str, ago: &str) {
        let sql = self.sql().await;
        sql.execute(
            "UPDATE operations SET attempts = 1 WHERE operation_id = $1",
            &[&op],
        )
        .await
        .unwrap();
        sql.execute(
            "INSERT INTO attempts (operation_id, fence, worker, started_at, finished_at, outcome, detail)
             VALUES ($1, 0, 'execute:old', now() - $2::text::interval, now() - $2::text::interval, 'not_executed', 'connection_refused')",
            &[&op, &ago],
        )
        .await
        .unwrap();
    }

    /// Waits until `queue` holds no ready message (every bell was taken).
    pub async fn drained(&self, queue: Queue) {
        let broker = self.broker.clone();
        eventually(&format!("{} to drain", queue.wire_name()), || {
            let broker = broker.clone();
            async move { (fleet_broker::message_count(&broker, queue).await.ok()? == 0).then_some(()) }
        })
        .await
    }

    /// Waits until the simulator has received a request for this reference.
    pub async fn provider_received(&self, op: &str) {
        let (http, url) = (
            self.http.clone(),
            format!(
                "{}/_sim/requests?reference={}",
                self.sim.base_url,
                self.reference_of(op).await
            ),
        );
        eventually("the request to reach the provider", || {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let v: Value = http.get(url).send().await.ok()?.json().await.ok()?;
                (!v["data"].as_array()?.is_empty()).then_some(())
            }
        })
        .await
    }

    pub async fn sim_effects(&self, op: &str) -> i64 {
        let v = self
            .sim_get(&format!(
                "/_sim/effects?reference={}",
                self.reference_of(op).await
            ))
            .await;
        ["payments", "refunds", "deals", "orders", "envelopes"]
            .iter()
            .map(|k| v[k].as_i64().unwrap_or(0))
            .sum()
    }

    /// How many objects of `kind` (`payments`, `deals`, …) the simulator holds under the
    /// operation's reference.
    pub async fn sim_effects_of(&self, op: &str, kind: &str) -> Value {
        let effects = self
            .sim_get(&format!("/_sim/effects?reference={}", reference(op)))
            .await;
        effects[kind].clone()
    }

    /// Escalates the operation as reconcile does when it hands a row to a person for
    /// `reason`: from the status and fence it `read`.
    pub async fn escalate(
        &self,
        op: &str,
        read: &fleet_store::OperationRow,
        reason: fleet_core::Reason,
    ) -> fleet_store::TransitionOutcome {
        let escalate = fleet_store::Transition {
            escalate: true,
            reason: Some(reason),
            ..fleet_store::Transition::new(
                at(op),
                read.status,
                read.fence,
                fleet_core::Event::Escalate,
                "reconcile",
            )
        };
        self.store.transition(escalate, None).await.unwrap()
    }

    /// An order the simulator holds, at `status`: its id.
    pub async fn sim_order(&self, status: &str) -> String {
        let order = self
            .sim_post("/_sim/orders", json!({ "status": status }))
            .await;
        order["id"].as_str().expect("an order id").to_owned()
    }

    /// Creates or replaces the payee `id` in the simulator's directory of beneficiaries
    /// (a Kazakh company paid to `account_number`): its answer, with the version.
    /// A payee the simulator's directory holds under `id` (beside its seeded vendors), so a
    /// payment to it passes intake.
    pub async fn directory_holds(&self, id: &str) -> Value {
        self.sim_payee(id, "Payee of the test", "KZ86 125K ZT50 0410 0100")
            .await
    }

    pub async fn sim_payee(&self, id: &str, name: &str, account_number: &str) -> Value {
        self.sim_post(
            "/_sim/beneficiaries",
            json!({"id": id, "name": name, "country": "KZ", "account_number": account_number}),
        )
        .await
    }

    /// The simulator's log of writes (creates, updates, transitions) for this reference
    /// (an operation id stands for its stored key, [`TestFleet::reference_of`]), or for
    /// every reference: `{"method", "path", "idempotency_key", "reference", "status",
    /// "replayed"}` each, in arrival order.
    pub async fn sim_requests(&self, reference: Option<&str>) -> Vec<Value> {
        let path = match reference {
            Some(reference) => format!(
                "/_sim/requests?reference={}",
                self.reference_of(reference).await
            ),
            None => "/_sim/requests".to_owned(),
        };
        let Value::Array(requests) = self.sim_get(&path).await["data"].take() else {
            panic!("{path} answers no data array");
        };
        requests
    }

    /// The create requests (POSTs) the simulator received for this reference.
    pub async fn sim_posts(&self, op: &str) -> usize {
        self.sim_requests(Some(op)).await.len()
    }

    /// The POSTs the simulator received for `op`'s reference on `path` (`/v1/deals`).
    pub async fn sim_posts_to(&self, op: &str, path: &str) -> usize {
        self.sim_requests(Some(op))
            .await
            .iter()
            .filter(|r| r["method"] == "POST" && r["path"] == path)
            .count()
    }

    /// A deal the simulator's CRM holds under our reference `external_id`, as if created
    /// elsewhere (an attempt whose record was lost, someone else): the deal. An operation
    /// id stands for its reference ([`TestFleet::reference_of`]).
    pub async fn sim_deal(&self, external_id: &str) -> Value {
        let external_id = self.reference_of(external_id).await;
        self.sim_post(
            "/_sim/deals",
            json!({"external_id": external_id, "name": "Acme renewal", "amount_minor": 990000, "currency": "EUR", "stage": "proposal", "owner_id": "u_7"}),
        )
        .await
    }

    /// A second payment with `op`'s reference that someone else created at the provider,
    /// under another key (the seed intent's amount and payee).
    pub async fn sim_foreign_payment(&self, op: &str) {
        let reference = self.reference_of(op).await;
        self.sim_create_payment(&format!("other-{op}"), &reference)
            .await;
    }

    /// A payment of the seed intent's amount to its payee, created at the provider as a
    /// client of its API would, under `key` with `reference`: the provider's payment.
    pub async fn sim_create_payment(&self, key: &str, reference: &str) -> Value {
        let r = self
            .http
            .post(format!("{}/v1/payments", self.sim.base_url))
            .bearer_auth("sk_test_sim")
            .header("Idempotency-Key", key)
            .json(&json!({"amount_minor": 1250000, "currency": "KZT", "beneficiary_id": "vendor_77", "invoice_id": "inv_9182", "reference": reference}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201, "the payment {key} is created");
        r.json().await.unwrap()
    }

    /// POSTs to the simulator's admin API and returns the JSON answer.
    pub async fn sim_post(&self, path: &str, body: Value) -> Value {
        let r = self
            .http
            .post(format!("{}{path}", self.sim.base_url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{path} refused: {}", r.status());
        r.json().await.unwrap()
    }

    pub async fn sim_fault(&self, fault: Value) {
        let r = self
            .http
            .post(format!("{}/_sim/faults", self.sim.base_url))
            .json(&fault)
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success(),
            "fault {fault} refused: {}",
            r.text().await.unwrap()
        );
    }

    pub async fn sim_get(&self, path: &str) -> Value {
        let request = self.http.get(format!("{}{path}", self.sim.base_url));
        success_json(request).await
    }

    /// GETs `path` of the simulator's provider API as its client (with the API key).
    pub async fn sim_api_get(&self, path: &str) -> Value {
        let request = self.http.get(format!("{}{path}", self.sim.base_url));
        success_json(request.bearer_auth("sk_test_sim")).await
    }

    /// Drains the dead-letter queue of `queue`: (body, reason header).
    pub async fn dead_letters(&self, queue: Queue) -> Vec<(Vec<u8>, Option<String>)> {
        fleet_broker::dead_letters(&self.broker, queue)
            .await
            .expect("read dead letters")
    }

    /// Waits until `n` dead letters are in `queue`'s dead-letter queue, then drains them.
    pub async fn expect_dead_letters(
        &self,
        queue: Queue,
        n: u32,
    ) -> Vec<(Vec<u8>, Option<String>)> {
        let broker = self.broker.clone();
        eventually(&format!("{n} dead letters"), || {
            let broker = broker.clone();
            async move {
                (fleet_broker::dead_letter_count(&broker, queue)
                    .await
                    .unwrap()
                    >= n)
                    .then_some(())
            }
        })
        .await;
        self.dead_letters(queue).await
    }

    pub async fn sql(&self) -> tokio_postgres::Client {
        sql_client(&self.database_url).await
    }

    pub async fn count(&self, sql: &str) -> i64 {
        self.sql().await.query_one(sql, &[]).await.unwrap().get(0)
    }

    /// The operation's history, oldest first.
    pub async fn history(&self, op: &str) -> Vec<fleet_store::EventRow> {
        self.store.events(at(op)).await.unwrap()
    }

    /// The operation succeeded with `external_id` by `actor`'s resolution, the last event
    /// of its history (returned).
    pub async fn resolved_succeeded(
        &self,
        op: &str,
        external_id: &str,
        actor: &str,
    ) -> fleet_store::EventRow {
        let row = self.row(op).await;
        assert_eq!(
            (row.status, row.external_id.as_deref()),
            (Status::Succeeded, Some(external_id))
        );
        let last = self.history(op).await.pop().unwrap();
        assert_eq!(last.actor, actor);
        last
    }

    /// The reason the operation's row gives for its status.
    pub async fn reason_of(&self, op: &str) -> Option<&'static str> {
        self.row(op)
            .await
            .status_reason
            .map(fleet_core::Reason::as_str)
    }

    /// How many events the operation's history holds.
    pub async fn history_len(&self, op: &str) -> i64 {
        self.sql()
            .await
            .query_one(
                "SELECT count(*) FROM operation_events WHERE operation_id = $1 AND tenant_id = $2",
                &[&op, &self.row(op).await.tenant_id],
            )
            .await
            .unwrap()
            .get(0)
    }

    /// GETs `url` and reads its answer as JSON.
    pub async fn get_json(&self, url: &str) -> Value {
        self.http
            .get(url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Stops the workers (they drain), then removes the database and the namespace.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        for w in self.workers.drain(..) {
            tokio::time::timeout(Duration::from_secs(20), w)
                .await
                .expect("workers drain within 20 s")
                .expect("worker task");
        }
        self.publisher.close().await;
        self.store.close();
        self.end_processes();
        fleet_broker::delete_namespace(&self.broker).await;
        let _ = fleet_store::drop_database(&self.database_url).await;
        self.removed = true;
    }
}

/// Deletes a run's broker namespace and drops its database, on a thread with a runtime
/// of its own (the test's runtime may be unwinding); what fails is left as it is.
pub(crate) fn remove_namespace_and_database(broker: &BrokerConfig, database_url: &str) {
    let (broker, url) = (broker.clone(), database_url.to_owned());
    let cleanup = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            fleet_broker::delete_namespace(&broker).await;
            let _ = fleet_store::drop_database(&url).await;
        });
    });
    let _ = cleanup.join();
}

impl Drop for TestFleet {
    /// A test that failed before `stop` still leaves nothing behind: its queues (the shared
    /// broker stops answering at a few hundred leftover quorum queues), its database and
    /// its database roles. On a thread of its own, with a runtime of its own, because the
    /// test's runtime may be the one unwinding.
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        self.shutdown.cancel();
        for w in &self.workers {
            w.abort();
        }
        self.store.close();
        self.end_processes();
        remove_namespace_and_database(&self.broker, &self.database_url);
    }
}

/// The principals that approve through the store in tests (`decider(name)`), present in
/// every test database.
pub const STORE_APPROVERS: [&str; 4] = ["test-approver", "ann", "ben", "approver"];

/// The approver of the harness's store-level approvals.
pub const TEST_APPROVER: Decider<'static> = Decider {
    name: "test-approver",
    signed_in_with: SignIn::Token,
};

/// A person deciding with a token, for the store's decision functions.
pub fn decider(name: &str) -> Decider<'_> {
    Decider::new(name, SignIn::Token)
}

/// A client of the database at `url`, its connection driven by the test's runtime.
pub async fn sql_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// The first column of every row `query` selects, in order.
pub async fn first_column<T: tokio_postgres::types::FromSqlOwned>(
    sql: &tokio_postgres::Client,
    query: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Vec<T> {
    let rows = sql.query(query, params).await.unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// The first two columns of every row `query` selects, in order.
pub async fn two_columns<A, B>(
    sql: &tokio_postgres::Client,
    query: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Vec<(A, B)>
where
    A: tokio_postgres::types::FromSqlOwned,
    B: tokio_postgres::types::FromSqlOwned,
{
    let rows = sql.query(query, params).await.unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// The repository's quorum policy files (what `POLICY_DIR` points the processes at).
pub fn policy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/policies")
}

/// The repository's quorum policies, as prepare and the API load them.
pub fn policies() -> PolicySet {
    fleet_runtime::load_policies(&policy_dir()).expect("the repository's policies load")
}

pub fn op_of(intent: &Value) -> String {
    intent["operation_id"].as_str().unwrap().to_owned()
}

pub fn hash_of(intent: &Value) -> String {
    fleet_core::parse_intent(&serde_json::to_vec(intent).unwrap())
        .unwrap()
        .payload_hash
        .as_str()
        .to_owned()
}

/// A port of 127.0.0.1 nothing listens on (the OS's pick; free when this returns).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `127.0.0.1:<a free port>`, for a process's listen address.
pub fn free_addr() -> String {
    format!("127.0.0.1:{}", free_port())
}

pub fn fault(route: &str, kind: &str) -> Value {
    json!({"route": route, "kind": kind})
}

fn connect(providers: &ProviderConfigs) -> Arc<Providers> {
    Arc::new(providers.connect().expect("the providers' clients"))
}

/// Makes `provider` document `contract`'s search lag and request bound.
pub fn documents(provider: &mut ProviderConfig, contract: ProviderContract) {
    provider.search_lag_ms = contract.search_lag_ms;
    provider.max_request_ms = contract.max_request_ms;
}

/// A provider contract for tests: the simulator's lag bound and a long key retention.
pub fn contract(search_lag_ms: u64) -> ProviderContract {
    ProviderContract {
        search_lag_ms,
        max_request_ms: 0,
        key_retention_ms: 86_400_000,
        escalate_after_failed_lookups: 5,
    }
}

/// Reconcile settings that sweep every 100 ms and look again after 200 ms.
pub fn fast_reconcile() -> ReconcileSettings {
    ReconcileSettings {
        sweep_interval_ms: 100,
        lookup_recheck_ms: 200,
        unstarted_redrive_ms: 500,
        ..ReconcileSettings::default()
    }
}
