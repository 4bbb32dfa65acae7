//! What each fleet component may do on the broker, as RabbitMQ's per-vhost permissions:
//! three regular expressions over exchange and queue names, for `configure` (declare,
//! delete), `write` (publish to an exchange, bind a queue) and `read` (consume, get).
//! Pure: names in, patterns out; `fleetctl broker setup` applies them.
//!
//! Every component runs with [`TopologyMode::Verify`](crate::TopologyMode): an admin
//! declared the topology, so no component may configure anything. Each may publish only
//! to the entry exchanges of the queues it rings, and read only the queue it consumes;
//! a consumer may also write to the dead-letter exchange, where it files rejected
//! messages. No one may write to the default exchange, which reaches every queue.

use std::fmt;

use crate::config::{BrokerConfig, Queue};

/// A component that connects to the broker with a user of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Proposes operations: publishes intents.
    Agent,
    /// `fleet-prepare`: consumes intents.
    Prepare,
    /// `fleet-execute`: consumes execute bells, rings reconcile.
    Execute,
    /// `fleet-reconcile`: consumes reconcile bells, rings execute (redrive).
    Reconcile,
    /// `fleet-webhook-ingest`: the receiver publishes verified webhooks, the consumer
    /// reads them. The only publisher of `webhooks.ingest`.
    WebhookIngest,
    /// `fleet-api`: an approval that completes a quorum rings execute.
    Api,
    /// A person with `fleetctl`: `reconcile` rings reconcile.
    Operator,
    /// `fleet-relay`: publishes outcome events to `fleet.events`, and takes the dead
    /// letters into Postgres.
    Relay,
}

impl Role {
    pub const ALL: [Role; 8] = [
        Role::Agent,
        Role::Prepare,
        Role::Execute,
        Role::Reconcile,
        Role::WebhookIngest,
        Role::Api,
        Role::Operator,
        Role::Relay,
    ];

    /// The role's name: the suffix of its user name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Prepare => "prepare",
            Role::Execute => "execute",
            Role::Reconcile => "reconcile",
            Role::WebhookIngest => "webhook-ingest",
            Role::Api => "api",
            Role::Operator => "operator",
            Role::Relay => "relay",
        }
    }

    /// The queues this role publishes to.
    pub fn publishes(self) -> &'static [Queue] {
        match self {
            Role::Agent => &[Queue::IntentsPrepare],
            Role::Prepare => &[],
            Role::Execute => &[Queue::OperationsReconcile],
            Role::Reconcile => &[Queue::OperationsExecute],
            Role::WebhookIngest => &[Queue::WebhooksIngest],
            // Rings execute when an approval completes a quorum; both, when an operator
            // replays a dead-lettered doorbell.
            Role::Api => &[Queue::OperationsExecute, Queue::OperationsReconcile],
            Role::Operator => &[Queue::OperationsReconcile],
            Role::Relay => &[],
        }
    }

    /// The queue this role consumes, if any.
    pub fn consumes(self) -> Option<Queue> {
        match self {
            Role::Prepare => Some(Queue::IntentsPrepare),
            Role::Execute => Some(Queue::OperationsExecute),
            Role::Reconcile => Some(Queue::OperationsReconcile),
            Role::WebhookIngest => Some(Queue::WebhooksIngest),
            Role::Agent | Role::Api | Role::Operator | Role::Relay => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One user's permissions on the vhost, as the broker takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    pub configure: String,
    pub write: String,
    pub read: String,
}

/// The least `role` needs, for the names of `cfg` (its namespace included).
pub fn permissions(cfg: &BrokerConfig, role: Role) -> Permissions {
    let mut write: Vec<String> = role
        .publishes()
        .iter()
        .map(|&q| cfg.entry_exchange_name(q))
        .collect();
    let mut read = Vec::new();
    if let Some(q) = role.consumes() {
        // Rejected messages go to the dead-letter exchange; a message parked for a retry
        // goes through the queue's retry exchange (bound to its retry queue only).
        write.push(cfg.dead_letter_exchange_name());
        write.push(cfg.retry_exchange_name(q));
        read.push(cfg.queue_name(q));
    }
    if role == Role::Relay {
        write.push(cfg.events_exchange_name());
        // The relay moves dead letters into Postgres, where operators list, replay and
        // discard them; it takes them from every work queue's dead-letter queue.
        read.extend(Queue::ALL.iter().map(|&q| cfg.dead_letter_queue_name(q)));
    }
    Permissions {
        configure: exactly(&[]),
        write: exactly(&write),
        read: exactly(&read),
    }
}

/// What one exchange's routing keys a user may use: RabbitMQ's topic permissions. On a
/// topic exchange, `read` is matched against the key of every binding the user makes from
/// it, `write` against the key of every message the user publishes to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPermissions {
    pub exchange: String,
    pub write: String,
    pub read: String,
}

/// The queues of an agent principal's own: `<ns.>events.<principal>/<anything>`. A
/// principal's name holds no `/`, so no principal's prefix is another's.
pub fn agent_queue_prefix(cfg: &BrokerConfig, principal: &str) -> String {
    cfg.namespaced(&format!("events.{principal}/"))
}

/// The least an agent principal's own broker user needs: publish intents (under its own
/// `user_id`, which the broker checks), and follow its tenants' outcome events on queues
/// of its own. It may declare, bind and consume queues under [`agent_queue_prefix`], and
/// bind them to `fleet.events` only with keys that end in one of its tenants' routing
/// words (`fleet.operation.<type or *>.<tenant>`, `fleet.mandate.<kind or *>.<tenant>`): `#`,
/// or another tenant's key, is refused
/// by the broker.
pub fn agent_principal_permissions(
    cfg: &BrokerConfig,
    principal: &str,
    tenants: &[String],
) -> (Permissions, TopicPermissions) {
    let own = format!("{}.+", escape(&agent_queue_prefix(cfg, principal)));
    let entry = escape(&cfg.entry_exchange_name(Queue::IntentsPrepare));
    let events = cfg.events_exchange_name();
    let permissions = Permissions {
        configure: format!("^{own}$"),
        write: format!("^({entry}|{own})$"),
        read: format!("^({}|{own})$", escape(&events)),
    };
    let words: Vec<String> = tenants
        .iter()
        .map(|t| escape(&fleet_core::events::tenant_segment(t)))
        .collect();
    let read = match words.as_slice() {
        // No tenant: no binding at all (`^$` matches no key a binding can have but the
        // empty one, which names no event).
        [] => "^$".to_owned(),
        // An operation's events and a mandate's, each of its tenants only.
        words => format!(
            r"^({}|{})[^.]+\.({})$",
            escape(fleet_core::events::TYPE_PREFIX),
            escape(fleet_core::events::MANDATE_TYPE_PREFIX),
            words.join("|")
        ),
    };
    let topic = TopicPermissions {
        exchange: events,
        write: "^$".to_owned(),
        read,
    };
    (permissions, topic)
}

/// A pattern matching exactly these names and nothing else (`^$` for none: the broker
/// has no resource with an empty name).
fn exactly(names: &[String]) -> String {
    let alternatives: Vec<String> = names.iter().map(|n| escape(n)).collect();
    match alternatives.as_slice() {
        [] => "^$".to_owned(),
        [one] => format!("^{one}$"),
        many => format!("^({})$", many.join("|")),
    }
}

fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len() * 2);
    for c in name.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(namespace: &str) -> BrokerConfig {
        BrokerConfig::new("amqp://u:p@127.0.0.1:5672/%2f").with_namespace(namespace)
    }

    #[test]
    fn each_role_writes_only_the_entries_it_rings_and_reads_only_its_queue() {
        let cfg = cfg("");
        let table: Vec<(Role, String, String)> = Role::ALL
            .iter()
            .map(|&r| {
                let p = permissions(&cfg, r);
                assert_eq!(p.configure, "^$", "{r}: no role configures anything");
                (r, p.write, p.read)
            })
            .collect();
        let expected = [
            (Role::Agent, r"^fleet\.to\.intents\.prepare$", "^$"),
            (
                Role::Prepare,
                r"^(fleet\.dlx|fleet\.retry\.intents\.prepare)$",
                r"^intents\.prepare$",
            ),
            (
                Role::Execute,
                r"^(fleet\.to\.operations\.reconcile|fleet\.dlx|fleet\.retry\.operations\.execute)$",
                r"^operations\.execute$",
            ),
            (
                Role::Reconcile,
                r"^(fleet\.to\.operations\.execute|fleet\.dlx|fleet\.retry\.operations\.reconcile)$",
                r"^operations\.reconcile$",
            ),
            (
                Role::WebhookIngest,
                r"^(fleet\.to\.webhooks\.ingest|fleet\.dlx|fleet\.retry\.webhooks\.ingest)$",
                r"^webhooks\.ingest$",
            ),
            (
                Role::Api,
                r"^(fleet\.to\.operations\.execute|fleet\.to\.operations\.reconcile)$",
                "^$",
            ),
            (Role::Operator, r"^fleet\.to\.operations\.reconcile$", "^$"),
            (
                Role::Relay,
                r"^fleet\.events$",
                r"^(intents\.prepare\.dead|operations\.execute\.dead|operations\.reconcile\.dead|webhooks\.ingest\.dead)$",
            ),
        ];
        let expected: Vec<(Role, String, String)> = expected
            .into_iter()
            .map(|(r, w, rd)| (r, w.to_owned(), rd.to_owned()))
            .collect();
        assert_eq!(table, expected);
    }

    #[test]
    fn only_webhook_ingest_may_publish_to_webhooks_ingest() {
        let cfg = cfg("");
        let entry = cfg.entry_exchange_name(Queue::WebhooksIngest);
        let writers: Vec<Role> = Role::ALL
            .into_iter()
            .filter(|&r| permissions(&cfg, r).write.contains(&escape(&entry)))
            .collect();
        assert_eq!(writers, vec![Role::WebhookIngest]);
        // Nobody is granted the default exchange (`amq.default` to the broker).
        assert!(Role::ALL
            .iter()
            .all(|&r| !permissions(&cfg, r).write.contains("amq")));
    }

    #[test]
    fn an_agent_principal_binds_only_its_tenants_events_on_queues_of_its_own() {
        let (p, topic) =
            agent_principal_permissions(&cfg(""), "bot-1", &["acme".into(), "a.b".into()]);
        let re = |pattern: &str| regex::Regex::new(pattern).unwrap();
        let configure = re(&p.configure);
        assert!(configure.is_match("events.bot-1/outcomes"));
        assert!(!configure.is_match("events.bot-1/"));
        assert!(!configure.is_match("events.bot-12/outcomes"));
        assert!(!configure.is_match("amq.gen-abc"));
        assert!(!configure.is_match("intents.prepare"));
        let write = re(&p.write);
        assert!(write.is_match("fleet.to.intents.prepare"));
        assert!(write.is_match("events.bot-1/outcomes"));
        assert!(!write.is_match("fleet.events"));
        assert!(!write.is_match("fleet.to.operations.execute"));
        let read = re(&p.read);
        assert!(read.is_match("fleet.events"));
        assert!(!read.is_match("intents.prepare"));
        assert_eq!(topic.exchange, "fleet.events");
        let bind = re(&topic.read);
        for ok in [
            "fleet.operation.succeeded.acme",
            "fleet.operation.*.acme",
            "fleet.operation.*.a%2Eb",
            "fleet.mandate.used.acme",
            "fleet.mandate.*.acme",
        ] {
            assert!(bind.is_match(ok), "{ok}");
        }
        for refused in [
            "#",
            "fleet.operation.#",
            "fleet.operation.*.*",
            "fleet.operation.*.#",
            "fleet.operation.*.acme2",
            "fleet.operation.*.globex",
            "fleet.operation.a.b.acme",
            "*.*.*.acme",
            "fleet.mandate.*.globex",
            "fleet.*.*.acme",
        ] {
            assert!(!bind.is_match(refused), "{refused}");
        }
        assert!(!re(&topic.write).is_match("fleet.operation.succeeded.acme"));
        // No tenant, no binding.
        let (_, none) = agent_principal_permissions(&cfg(""), "bot-1", &[]);
        assert!(!re(&none.read).is_match("fleet.operation.*.acme"));
    }

    #[test]
    fn the_namespace_is_part_of_every_name_and_escaped() {
        let p = permissions(&cfg("t01a-b"), Role::Agent);
        assert_eq!(p.write, r"^t01a\-b\.fleet\.to\.intents\.prepare$");
        assert_eq!(escape("a.b*c(d)"), r"a\.b\*c\(d\)");
    }
}
