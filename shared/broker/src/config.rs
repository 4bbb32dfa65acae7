//! Broker settings, the named bounds the broker code obeys, and the one place where
//! queue and exchange names are derived (so a test namespace isolates everything).

use crate::error::BrokerError;
use lapin::uri::AMQPUri;
use std::{fmt, str::FromStr};

/// Prefetch used by [`BrokerConfig::new`]; kept at most 32 so a crash loop cannot push innocent messages to the delivery limit.
pub const DEFAULT_PREFETCH: u16 = 32;
/// `x-delivery-limit` used by [`BrokerConfig::new`]: the broker's poison-message backstop
/// for deliveries that are never settled (a handler that crashes its process).
pub const DEFAULT_DELIVERY_LIMIT: u32 = 20;
/// Retries used by [`BrokerConfig::new`]: how often a `Disposition::Retry` message is
/// parked and tried again before it is dead-lettered `retries_exhausted`. With the
/// retry delays below that is about 76 s of failures in a row (a Postgres restart fits).
pub const DEFAULT_RETRY_LIMIT: u32 = 20;
/// Connect timeout used by [`BrokerConfig::new`].
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// AMQP heartbeat requested when the URL has no `heartbeat=` parameter. Without it the
/// server's 60 s applies and a silently dead peer is noticed only after ~2 minutes.
pub const DEFAULT_HEARTBEAT_S: u16 = 10;
/// How long `consume` waits for in-flight handlers after shutdown before aborting them
/// (their messages are then redelivered). Below Kubernetes' default 30 s grace period.
pub const DRAIN_TIMEOUT_MS: u64 = 25_000;
/// Bound on each graceful close/cancel call, so shutdown never hangs on a dead broker.
pub const CLOSE_TIMEOUT_MS: u64 = 2_000;
/// Reconnect backoff of the consumer loop: exponential from MIN to MAX, with jitter.
pub const RECONNECT_BACKOFF_MIN_MS: u64 = 100;
/// See [`RECONNECT_BACKOFF_MIN_MS`].
pub const RECONNECT_BACKOFF_MAX_MS: u64 = 10_000;
/// How long a `Disposition::Retry` message waits in its retry queue before it is tried
/// again: exponential in its earlier retries from MIN to MAX, so a Postgres outage does
/// not become a hot loop. The wait holds no consumer slot.
pub const RETRY_BACKOFF_MIN_MS: u64 = 100;
/// See [`RETRY_BACKOFF_MIN_MS`].
pub const RETRY_BACKOFF_MAX_MS: u64 = 5_000;
/// How long a publish waits for the broker's confirm before reporting failure.
pub const PUBLISH_CONFIRM_TIMEOUT_MS: u64 = 10_000;
/// Connection attempts a `Publisher::publish` makes when its connection is broken.
pub const PUBLISH_RECONNECT_ATTEMPTS: u32 = 3;
/// How often an idle `Publisher` checks its connection and, if it died, reconnects
/// (with backoff), so readiness recovers without waiting for the next publish.
pub const PUBLISHER_WATCH_INTERVAL_MS: u64 = 1_000;
/// Upper bound on messages one `dead_letters` call drains.
pub const DEAD_LETTERS_MAX_BATCH: usize = 10_000;
/// Longest namespace accepted: every derived name must fit an AMQP short string (255).
pub const MAX_NAMESPACE_LEN: usize = 200;

/// The four work queues. The wire names are the contract between binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Queue {
    /// `intents.prepare`: agent intents to validate and snapshot.
    IntentsPrepare,
    /// `operations.execute`: doorbells for approved operations.
    OperationsExecute,
    /// `operations.reconcile`: doorbells for operations in doubt.
    OperationsReconcile,
    /// `webhooks.ingest`: verified provider webhook events.
    WebhooksIngest,
}

impl Queue {
    /// Every work queue, in declaration order.
    pub const ALL: [Queue; 4] = [
        Queue::IntentsPrepare,
        Queue::OperationsExecute,
        Queue::OperationsReconcile,
        Queue::WebhooksIngest,
    ];

    /// The queue's wire name without namespace; also the bounded `queue` metric label.
    pub fn wire_name(self) -> &'static str {
        match self {
            Queue::IntentsPrepare => "intents.prepare",
            Queue::OperationsExecute => "operations.execute",
            Queue::OperationsReconcile => "operations.reconcile",
            Queue::WebhooksIngest => "webhooks.ingest",
        }
    }
}

impl fmt::Display for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wire_name())
    }
}

/// What a binary does with the topology when it connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopologyMode {
    /// Declare every exchange, queue and binding (idempotently). Needs the broker's
    /// `configure` permission on all of them: development, tests, an admin user.
    #[default]
    Declare,
    /// Only check, passively, that every exchange and queue exists; an admin declared
    /// them beforehand (`fleetctl broker setup`). Needs no `configure` permission, so a
    /// component's own least-privilege user can neither create nor delete any of them.
    Verify,
}

impl From<fleet_runtime::AmqpTopology> for TopologyMode {
    fn from(setting: fleet_runtime::AmqpTopology) -> TopologyMode {
        match setting {
            fleet_runtime::AmqpTopology::Declare => TopologyMode::Declare,
            fleet_runtime::AmqpTopology::Verify => TopologyMode::Verify,
        }
    }
}

/// How to reach the broker and how the topology is shaped.
///
/// `Debug` is written by hand so the password in `amqp_url` never reaches a log.
#[derive(Clone)]
pub struct BrokerConfig {
    /// e.g. `amqp://guest:guest@127.0.0.1:5672/%2f`, or the nodes of a cluster as a
    /// comma-separated list of such URLs: a connection goes to the first node that answers,
    /// trying them in turn from a rotating start. Contains a password: never log it
    /// (use [`BrokerConfig::log_target`]). A `heartbeat=` query parameter is honoured;
    /// without one [`DEFAULT_HEARTBEAT_S`] is requested.
    pub amqp_url: String,
    /// `""` in production; tests use a random one and every name becomes `<namespace>.<name>`.
    pub namespace: String,
    /// Unacknowledged deliveries the broker may push to one consumer (must be > 0).
    pub prefetch: u16,
    /// `x-delivery-limit` of every work queue (must be > 0).
    pub delivery_limit: u32,
    /// Tries after the first that a message answered `Disposition::Retry` gets; then it
    /// is dead-lettered `retries_exhausted`.
    pub retry_limit: u32,
    /// Bound on establishing one connection (TCP + AMQP handshake).
    pub connect_timeout_ms: u64,
    /// Declare the topology, or only verify it exists.
    pub topology: TopologyMode,
}

impl BrokerConfig {
    /// A production config (empty namespace) with the documented defaults.
    pub fn new(amqp_url: impl Into<String>) -> Self {
        Self {
            amqp_url: amqp_url.into(),
            namespace: String::new(),
            prefetch: DEFAULT_PREFETCH,
            delivery_limit: DEFAULT_DELIVERY_LIMIT,
            retry_limit: DEFAULT_RETRY_LIMIT,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            topology: TopologyMode::Declare,
        }
    }

    /// The same config, handling the topology as `mode` says.
    pub fn with_topology(mut self, mode: TopologyMode) -> Self {
        self.topology = mode;
        self
    }

    /// The same config in another namespace (tests).
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The broker-side name of a work queue.
    pub fn queue_name(&self, q: Queue) -> String {
        self.namespaced(q.wire_name())
    }

    /// The broker-side name of a work queue's dead-letter queue: `<queue name>.dead`.
    pub fn dead_letter_queue_name(&self, q: Queue) -> String {
        format!("{}.dead", self.queue_name(q))
    }

    /// The broker-side name of a work queue's retry queue: `<queue name>.retry`. A message
    /// waits there, unconsumed, until its per-message TTL sends it back to the work queue.
    pub fn retry_queue_name(&self, q: Queue) -> String {
        format!("{}.retry", self.queue_name(q))
    }

    /// The broker-side name of the exchange a consumer parks messages through:
    /// `<ns.>fleet.retry.<queue>`, bound to the retry queue only, so that the consumer's
    /// write permission reaches its retry queue and not its work queue.
    pub fn retry_exchange_name(&self, q: Queue) -> String {
        self.namespaced(&format!("fleet.retry.{}", q.wire_name()))
    }

    /// The broker-side name of the exchange a work queue is published to:
    /// `<ns.>fleet.to.<queue>`. Every queue has its own, so that the broker's `write`
    /// permission, which names exchanges, says who may publish to which queue; the
    /// default exchange reaches every queue and is never granted.
    pub fn entry_exchange_name(&self, q: Queue) -> String {
        self.namespaced(&format!("fleet.to.{}", q.wire_name()))
    }

    /// The broker-side name of the shared dead-letter exchange: `<ns.>fleet.dlx`.
    pub fn dead_letter_exchange_name(&self) -> String {
        self.namespaced("fleet.dlx")
    }

    /// The broker-side name of the outcome events exchange (topic): `<ns.>fleet.events`.
    pub fn events_exchange_name(&self) -> String {
        self.namespaced("fleet.events")
    }

    /// The URL of each broker node `amqp_url` names: one, or several nodes of a cluster
    /// as a comma-separated list (see [`fleet_runtime::split_url_list`]).
    pub fn node_urls(&self) -> Vec<&str> {
        fleet_runtime::split_url_list(&self.amqp_url)
    }

    /// `host:port` of each broker node, comma-separated: safe to log, unlike `amqp_url`.
    pub fn log_target(&self) -> String {
        let targets: Vec<String> = self
            .node_urls()
            .into_iter()
            .map(|url| match AMQPUri::from_str(url) {
                Ok(uri) => format!("{}:{}", uri.authority.host, uri.authority.port),
                Err(_) => "<invalid amqp_url>".to_owned(),
            })
            .collect();
        match targets.is_empty() {
            true => "<invalid amqp_url>".to_owned(),
            false => targets.join(","),
        }
    }

    /// The broker user of the first node's URL (lapin's default, `guest`, when the URL
    /// names none).
    pub fn user(&self) -> Option<String> {
        let first = *self.node_urls().first()?;
        AMQPUri::from_str(first)
            .ok()
            .map(|uri| uri.authority.userinfo.username)
    }

    /// Rejects settings that would make the broker unbounded or names unrepresentable.
    pub fn validate(&self) -> Result<(), BrokerError> {
        if self.prefetch == 0 {
            // AMQP reads prefetch 0 as "no limit": exactly what we must never ask for.
            return Err(BrokerError::Config("prefetch must be > 0".into()));
        }
        if self.delivery_limit == 0 {
            return Err(BrokerError::Config("delivery_limit must be > 0".into()));
        }
        if self.connect_timeout_ms == 0 {
            return Err(BrokerError::Config("connect_timeout_ms must be > 0".into()));
        }
        if self.namespace.len() > MAX_NAMESPACE_LEN {
            return Err(BrokerError::Config(format!(
                "namespace longer than {MAX_NAMESPACE_LEN} bytes"
            )));
        }
        self.amqp_uris().map(|_| ())
    }

    /// Each node's parsed URL, in the order given, with our heartbeat and TCP timeout
    /// defaults applied.
    pub(crate) fn amqp_uris(&self) -> Result<Vec<AMQPUri>, BrokerError> {
        let urls = self.node_urls();
        if urls.is_empty() {
            return Err(BrokerError::Config("amqp_url names no broker".into()));
        }
        urls.into_iter()
            .enumerate()
            .map(|(n, url)| {
                // The parser's error text echoes the whole URL, password included: drop it.
                let mut uri = AMQPUri::from_str(url).map_err(|_| {
                    BrokerError::Config(format!(
                        "amqp_url: URL {} of the list is not a valid amqp:// or amqps:// URL",
                        n + 1
                    ))
                })?;
                uri.query.heartbeat.get_or_insert(DEFAULT_HEARTBEAT_S);
                uri.query
                    .connection_timeout
                    .get_or_insert(self.connect_timeout_ms);
                Ok(uri)
            })
            .collect()
    }

    pub(crate) fn namespaced(&self, name: &str) -> String {
        if self.namespace.is_empty() {
            name.to_owned()
        } else {
            format!("{}.{name}", self.namespace)
        }
    }
}

impl fmt::Debug for BrokerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerConfig")
            .field(
                "amqp_url",
                &format_args!("amqp://***@{}", self.log_target()),
            )
            .field("namespace", &self.namespace)
            .field("prefetch", &self.prefetch)
            .field("delivery_limit", &self.delivery_limit)
            .field("retry_limit", &self.retry_limit)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("topology", &self.topology)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "amqp://guest:s3cret@127.0.0.1:5672/%2f";

    /// Each kind of name the configuration gives, with the wire name it stands for
    /// outside any namespace.
    fn names(cfg: &BrokerConfig) -> [(String, &'static str); 8] {
        [
            (
                cfg.queue_name(Queue::OperationsExecute),
                "operations.execute",
            ),
            (cfg.queue_name(Queue::IntentsPrepare), "intents.prepare"),
            (
                cfg.dead_letter_queue_name(Queue::WebhooksIngest),
                "webhooks.ingest.dead",
            ),
            (
                cfg.dead_letter_queue_name(Queue::OperationsReconcile),
                "operations.reconcile.dead",
            ),
            (cfg.dead_letter_exchange_name(), "fleet.dlx"),
            (
                cfg.retry_queue_name(Queue::IntentsPrepare),
                "intents.prepare.retry",
            ),
            (
                cfg.retry_queue_name(Queue::WebhooksIngest),
                "webhooks.ingest.retry",
            ),
            (
                cfg.entry_exchange_name(Queue::WebhooksIngest),
                "fleet.to.webhooks.ingest",
            ),
        ]
    }

    #[test]
    fn production_names_are_the_wire_names() {
        let cfg = BrokerConfig::new(URL);
        for (name, wire) in names(&cfg) {
            assert_eq!(name, wire);
        }
        assert_eq!(
            cfg.entry_exchange_name(Queue::IntentsPrepare),
            "fleet.to.intents.prepare"
        );
        assert_eq!(cfg.topology, TopologyMode::Declare);
    }

    #[test]
    fn namespace_prefixes_every_name() {
        let cfg = BrokerConfig::new(URL).with_namespace("t01");
        for (name, wire) in names(&cfg) {
            assert_eq!(name, format!("t01.{wire}"));
        }
    }

    #[test]
    fn debug_and_log_target_never_show_the_password() {
        let cfg = BrokerConfig::new(URL);
        assert!(!format!("{cfg:?}").contains("s3cret"));
        assert_eq!(cfg.log_target(), "127.0.0.1:5672");
    }

    #[test]
    fn invalid_url_error_does_not_echo_the_url() {
        let cfg = BrokerConfig::new("amqp:s3cret");
        let err = cfg.validate().unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[test]
    fn unbounded_settings_are_rejected() {
        let mut cfg = BrokerConfig::new(URL);
        cfg.prefetch = 0;
        assert!(cfg.validate().is_err());
        let mut cfg = BrokerConfig::new(URL);
        cfg.delivery_limit = 0;
        assert!(cfg.validate().is_err());
        assert!(BrokerConfig::new(URL).validate().is_ok());
    }

    #[test]
    fn heartbeat_default_applies_only_when_absent() {
        let uris = BrokerConfig::new(URL).amqp_uris().unwrap();
        assert_eq!(uris[0].query.heartbeat, Some(DEFAULT_HEARTBEAT_S));
        let uris = BrokerConfig::new(format!("{URL}?heartbeat=3"))
            .amqp_uris()
            .unwrap();
        assert_eq!(uris[0].query.heartbeat, Some(3));
    }

    #[test]
    fn a_cluster_is_a_list_of_node_urls() {
        let cfg = BrokerConfig::new(format!("{URL},amqp://guest:s3cret@10.0.0.2:5673/%2f"));
        let uris = cfg.amqp_uris().unwrap();
        assert_eq!(uris.len(), 2);
        assert_eq!(uris[1].authority.port, 5673);
        assert_eq!(
            uris[1].query.connection_timeout,
            Some(DEFAULT_CONNECT_TIMEOUT_MS)
        );
        assert_eq!(cfg.log_target(), "127.0.0.1:5672,10.0.0.2:5673");
        assert!(!format!("{cfg:?}").contains("s3cret"));
        assert_eq!(cfg.user().as_deref(), Some("guest"));
    }

    #[test]
    fn a_bad_node_url_is_named_by_its_place_not_echoed() {
        let cfg = BrokerConfig::new(format!("{URL},amqp://u:s3cret@host:notaport/%2f"));
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("URL 2"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        assert!(BrokerConfig::new("").validate().is_err());
    }
}
