//! The command line. Connection settings are global flags with env, as in the workers.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use fleet_broker::BrokerConfig;
use fleet_runtime::RedactedUrl;

#[derive(Parser)]
#[command(name = "fleetctl", version, about = "Approve, inspect and operate the fleet")]
pub struct Cli {
    #[command(flatten)]
    pub conn: Connection,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Clone, Debug)]
pub struct Connection {
    /// Postgres URL (the password is never printed).
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true, default_value = "postgres://postgres@127.0.0.1:5432/fleet")]
    pub database_url: RedactedUrl,
    /// RabbitMQ URL (the password is never printed).
    #[arg(long, global = true, env = "AMQP_URL", hide_env_values = true, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    pub amqp_url: RedactedUrl,
    /// Prefix of every queue name (empty in production).
    #[arg(long, global = true, env = "AMQP_NAMESPACE", default_value = "")]
    pub amqp_namespace: String,
}

impl Connection {
    pub fn broker(&self) -> BrokerConfig {
        BrokerConfig::new(self.amqp_url.expose()).with_namespace(self.amqp_namespace.clone())
    }
}

#[derive(Subcommand)]
pub enum Command {
    /// Create the database if needed and apply every pending migration.
    Migrate,
    /// Print the payload hash of an intent.v1 file (what an approver approves).
    Hash { file: PathBuf },
    /// Validate an intent.v1 file and publish it to intents.prepare with a publisher confirm.
    Submit { file: PathBuf },
    /// Submit a corrected intent that replaces OP (it needs a new approval).
    Supersede {
        operation_id: String,
        #[arg(long)]
        file: PathBuf,
    },
    /// Approve the exact snapshot hash of a pending operation, then ring its execute bell.
    Approve {
        operation_id: String,
        #[arg(long)]
        hash: String,
        #[arg(long)]
        by: String,
    },
    /// Reject an operation that has not started; it is cancelled.
    Reject {
        operation_id: String,
        #[arg(long)]
        by: String,
        #[arg(long)]
        reason: String,
    },
    /// Show one operation with its attempts and events.
    Show {
        operation_id: String,
        #[arg(long)]
        json: bool,
    },
    /// List operations, newest first.
    List {
        #[arg(long)]
        status: Option<String>,
        /// Only operations escalated to an operator.
        #[arg(long)]
        escalated: bool,
        #[arg(long, default_value_t = 50)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
    /// Settle an unknown or accepted operation by hand, with evidence.
    Resolve {
        operation_id: String,
        #[arg(long, value_enum)]
        outcome: crate::operator::Resolution,
        /// The provider's id of the effect (required for succeeded unless already known).
        #[arg(long)]
        external_id: Option<String>,
        #[arg(long)]
        evidence: String,
        #[arg(long)]
        by: String,
    },
    /// Take an operation out of the workers' hands for investigation.
    Dispute {
        operation_id: String,
        #[arg(long)]
        by: String,
        #[arg(long)]
        reason: String,
    },
    /// Ring the reconcile doorbell for an operation now.
    Reconcile { operation_id: String },
    /// Bearer tokens for the HTTP API (create, revoke, list).
    Token {
        #[command(subcommand)]
        command: crate::token::TokenCommand,
    },
    /// People and bots who may act (add, list, remove); people sign in to the console
    /// by their OpenID Connect subject.
    Principal {
        #[command(subcommand)]
        command: crate::principal::PrincipalCommand,
    },
    /// Run the whole pipeline on this machine and print what happened.
    Demo(crate::demo::DemoArgs),
    /// Measure throughput, latency and cost of the fleet on this machine (issue 7).
    Bench(crate::bench::BenchArgs),
}
