//! The flag groups commands share: the owner's database, the broker, both, and how
//! operations are printed. Kept apart from the command tree (`cli`) so that the modules a
//! command runs take their flags from here without reaching back into the tree.

use clap::{Args, ValueEnum};
use fleet_broker::BrokerConfig;
use fleet_runtime::{AmqpTopology, RedactedUrl};

/// The owner's database connection: operator tooling only (people read and decide through
/// the API). Global within the command it is given to, so `token create --database-url …`
/// works as well as `token --database-url … create`.
#[derive(Args, Clone, Debug)]
pub struct Database {
    /// Postgres URL (the password is never printed).
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        hide_env_values = true,
        default_value = "postgres://postgres@127.0.0.1:5432/fleet"
    )]
    pub database_url: RedactedUrl,
}

/// The broker connection, for the commands that publish or administer the broker.
#[derive(Args, Clone, Debug)]
pub struct Broker {
    /// RabbitMQ URL (the password is never printed).
    #[arg(
        long,
        global = true,
        env = "AMQP_URL",
        hide_env_values = true,
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f"
    )]
    pub amqp_url: RedactedUrl,
    /// Prefix of every queue name (empty in production).
    #[arg(long, global = true, env = "AMQP_NAMESPACE", default_value = "")]
    pub amqp_namespace: String,
    /// `verify` with a least-privilege broker user (the agent's for submit, the
    /// operator's for reconcile): check the topology, never declare it.
    #[arg(long, global = true, env = "AMQP_TOPOLOGY", value_enum, default_value_t = AmqpTopology::Declare)]
    pub amqp_topology: AmqpTopology,
}

impl Broker {
    pub fn config(&self) -> BrokerConfig {
        BrokerConfig::new(self.amqp_url.expose())
            .with_namespace(self.amqp_namespace.clone())
            .with_topology(self.amqp_topology.into())
    }
}

/// Both: for the commands that read the database and ring or administer the broker
/// (reconcile, principal, the demo and the bench).
#[derive(Args, Clone, Debug)]
pub struct Connection {
    #[command(flatten)]
    pub db: Database,
    #[command(flatten)]
    pub amqp: Broker,
}

impl Connection {
    pub fn broker(&self) -> BrokerConfig {
        self.amqp.config()
    }
}

/// How every command prints its result (`-o`/`--json` are global: given anywhere on the
/// command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Table,
    /// One JSON document on stdout and nothing else there: the API's answer as it came
    /// for the commands that ask the API, an object with documented keys for the others.
    Json,
}

#[derive(Args, Clone, Copy, Debug)]
pub struct OutputArgs {
    /// Output format.
    #[arg(short = 'o', long = "output", global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Same as `-o json`.
    #[arg(long, global = true, conflicts_with = "format")]
    pub json: bool,
}

impl OutputArgs {
    pub fn format(self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
}
